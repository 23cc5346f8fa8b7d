"""Adding a hardware target is one registry block: a copy of the source tree gets a throwaway
target appended to rules/targets.toml and nothing else, and it shows up in every report format,
`audit rules`, `audit explain`, the configuration's validation, the gates and the verdicts, while
`overall` (a named, versioned set) does not move."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auditor.report import REPORTERS

ROOT = Path(__file__).resolve().parent.parent
BLOCK = '''
[[target]]
name = "zpu"
display = "ZPU"
vendor = "Zeta"
roles = ["torch-accelerator", "native-privateuse1"]
device = "zpu"
words = ["zpu"]
helpers = ['^is_(torch_)?zpu(_available)?$']
siblings = ["zpu"]
visibility = ["ZPU_VISIBLE_DEVICES"]
'''
DRIVER = textwrap.dedent('''
    import contextlib, io, json, sys
    from auditor.cli import main
    from auditor.report import REPORTERS

    out = {}
    for fmt in REPORTERS:
        code = main(["repo", "--no-cache", "--isolated", "--format", fmt, "-o", f"report.{fmt}"])
        out[fmt] = [code, open(f"report.{fmt}", encoding="utf-8").read()]
    for name, args in {"rules": ["rules"], "rules-json": ["rules", "--format", "json"],
                       "explain": ["explain", "LK204"], "help": ["scan", "--help"],
                       "gate": ["repo", "--no-cache", "--isolated", "--format", "json", "--target", "zpu",
                                "--fail-under", "99"],
                       "bad-target": ["repo", "--no-cache", "--isolated", "--target", "zpuu"],
                       "config": ["repo", "--no-cache", "--config", "bad.toml"]}.items():
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code
        out[name] = [code, stdout.getvalue() + stderr.getvalue()]
    json.dump(out, sys.stdout)
''')


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("new-target")
    src = work / "src"
    shutil.copytree(ROOT / "auditor", src / "auditor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", src / "rules")
    with (src / "rules" / "targets.toml").open("a", encoding="utf-8") as handle:
        handle.write(BLOCK)  # the only change: one block
    repo = work / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("import torch\ntorch.cuda.synchronize()\nmodel = Net().cuda()\n", encoding="utf-8")
    (repo / "env.sh").write_text("export CUDA_VISIBLE_DEVICES=0\n", encoding="utf-8")
    (work / "bad.toml").write_text('targets = ["zpuu"]\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-c", DRIVER], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow  # one interpreter, a dozen runs
def test_the_catalogue_accepts_the_new_target_through_its_family_defaults(outputs):
    assert "error" not in outputs["json"][1].lower()[:200]  # the load-time check found nothing to stop
    report = json.loads(outputs["json"][1])
    assert report["targets"][-2:] == ["cpu", "zpu"] and report["warnings"] == []
    for finding in report["findings"]:
        assert "zpu" in finding["targets"]


@pytest.mark.slow
def test_every_report_format_shows_it(outputs):
    for fmt in REPORTERS:
        code, text = outputs[fmt]
        assert code == 0, (fmt, text[-300:])
        assert "zpu" in text.lower(), fmt  # a score row, a finding's effects, or a message rendering its name


@pytest.mark.slow
def test_scores_verdicts_and_overall(outputs):
    report = json.loads(outputs["json"][1])
    assert report["verdicts"]["zpu"]["verdict"] == "fails"  # torch.cuda.synchronize raises there: the family default
    assert report["scores"]["zpu"] < 100 and report["costs"]["zpu"]
    assert report["overall"] == {"name": "core", "version": 1,
                                 "members": ["rocm", "tpu", "trainium", "mps", "xpu", "cpu"]}
    members = report["overall"]["members"]
    assert report["scores"]["overall"] == round(sum(report["scores"][t] for t in members) / len(members), 1)
    sync = next(f for f in report["findings"] if f["rule"] == "LK204")
    assert sync["targets"]["zpu"] == "raises" and "ZPU" in sync["message"]
    visible = next(f for f in report["findings"] if f["rule"] == "LK601")
    assert visible["targets"]["zpu"] == "degrades" and "ZPU" in visible["message"]


@pytest.mark.slow
def test_rules_explain_help_config_and_gates(outputs):
    header = next(line for line in outputs["rules"][1].splitlines() if "code" in line and "severity" in line)
    assert header.split().index("zpu") > header.split().index("cpu")  # a column of its own, after the CPU
    listed = {r["code"]: r for r in json.loads(outputs["rules-json"][1])}
    assert listed["LK204"]["targets"]["zpu"] == "raises" and listed["LK201"]["targets"]["zpu"] == "degrades"
    assert "zpu" in outputs["explain"][1]  # the effects table and the "In context" table
    assert "npu, cpu, zpu" in " ".join(outputs["help"][1].replace("│", " ").split())  # the --target choices
    code, text = outputs["gate"]
    assert code == 1 and "zpu score" in text and "below --fail-under 99" in text
    code, text = outputs["bad-target"]
    assert code == 2 and "unknown --target 'zpuu' (did you mean 'zpu'?)" in text and "zpu" in text
    code, text = outputs["config"]
    assert code == 2 and "names unknown target 'zpuu' (did you mean 'zpu'?)" in text
