"""The GitHub Action (action.yml at the repository root): valid against the action metadata
schema (schemastore's, as check-jsonschema vendors it), composite, installing from its own
checkout; and its run steps executed for real with bash as a runner would (the install step
aside: the auditor under test is already on PATH), writing the SARIF, the job summary and the
exit code, and failing only in the last step."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def test_action_validates_against_the_action_metadata_schema(action):
    schema = json.loads(files("check_jsonschema.builtin_schemas.vendor").joinpath("github-actions.json")
                        .read_text(encoding="utf-8"))
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(action)]
    assert not errors, errors
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)  # composite run steps need one
    install = steps[0]["run"]
    assert "$ACTION_PATH" in install and steps[0]["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif@") for step in steps)
    assert "GITHUB_STEP_SUMMARY" in steps[1]["run"]
    # inputs reach the scripts through env only: an input expanded into a script could run code
    assert not any("${{" in step.get("run", "") for step in steps)


def _run_step(script: str, env: dict, cwd: Path) -> int:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          timeout=300).returncode


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("args", "expected"), [("", 0), ("--fail-on major", 1)])
def test_the_steps_write_sarif_summary_and_gate(action, tmp_path, args, expected):
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("import torch\nmodel = Net().cuda()\n", encoding="utf-8")
    output, summary = tmp_path / "output", tmp_path / "summary.md"
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    inputs["args"] = f"{args} --no-cache --isolated".strip()
    env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    steps = action["runs"]["steps"]
    audit = steps[1]
    step_env = {k: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], v)
                for k, v in audit["env"].items()}
    assert _run_step(audit["run"], {**env, **step_env}, work) == 0  # the audit step never fails
    code = dict(line.split("=", 1) for line in output.read_text().splitlines())["exit-code"]
    assert code == str(expected)
    sarif = json.loads((work / inputs["sarif-file"]).read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    assert summary.read_text(encoding="utf-8").startswith("## lockin-auditor")
    gate = steps[-1]
    assert _run_step(gate["run"], {**env, "CODE": code}, work) == expected
