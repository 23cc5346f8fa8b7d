"""`python -m auditor.dev new-rule`: the scaffolded rule loads, passes the load-time catalogue check,
its examples run, `audit rules` lists it and ruff accepts the module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auditor.dev import ScaffoldError, new_rule

ROOT = Path(__file__).resolve().parent.parent
CHECK = textwrap.dedent('''
    import json, sys, tempfile
    from pathlib import Path
    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan
    from auditor.checks.registry import find_rule, full_catalogue, registry_warnings
    rule = find_rule(sys.argv[1])
    full_catalogue()  # the load-time check: raises on any catalogue problem
    results = []
    for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID)):
        for example in examples:
            folder = Path(tempfile.mkdtemp())
            (folder / example.path).write_text(example.code, encoding="utf-8")
            found = [f for f in scan([str(folder)], Settings(cache=False, jobs=1)).findings if f.rule == rule.code]
            results.append([kind, example.line, [f.line for f in found], [f.message for f in found]])
    print(json.dumps({"code": rule.code, "effects": rule.effects(), "warnings": list(registry_warnings()),
                      "results": results}))
''')


def copy_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "auditor", src / "auditor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", src / "rules")
    return src


def run(src: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, *args], cwd=src, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # three interpreter start-ups
@pytest.mark.parametrize(("category", "api"), [("cuda-api", "torch.cuda.foo_control"), ("env", "acme_smi.query")])
def test_a_scaffolded_rule_loads_passes_the_check_and_its_examples_run(tmp_path, category, api):
    src = copy_tree(tmp_path)
    proc = run(src, "-m", "auditor.dev", "new-rule", "acme-foo-call", "--api", api, "--category", category,
               "--replacement", "torch.accelerator.foo()", "--since", "2.9", "--root", str(src))
    assert proc.returncode == 0, proc.stderr
    module = src / "auditor" / "checks" / "acme_foo_call.py"
    assert f"wrote {module}" in proc.stdout
    assert 'acme-foo-call = {}' in (src / "rules" / f"{category.replace('-', '_')}.toml").read_text(encoding="utf-8")
    proc = run(src, "-c", CHECK, "acme-foo-call")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["warnings"] == []
    for kind, line, lines, messages in report["results"]:
        if kind == "valid":
            assert lines == [], (kind, messages)
        else:
            assert line in lines, (kind, line, lines)
            assert all("{" not in m and "}" not in m for m in messages)  # every template field was filled
    messages = [m for *_, ms in report["results"] for m in ms]
    assert messages and all(m.startswith(f"`{api}` is CUDA-only: it ") for m in messages)
    expected = {"raises": "raises on", "degrades": "silently does less on"}  # the family default decides
    for effect, words in expected.items():
        assert all((words in m) == (effect in report["effects"].values()) for m in messages), (effect, messages)
    listed = run(src, "-m", "auditor", "rules", "--format", "json")
    assert listed.returncode == 0 and report["code"] in {r["code"] for r in json.loads(listed.stdout)}
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"), str(module)],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_the_scaffold_refuses_what_would_clash(tmp_path):
    src = copy_tree(tmp_path)
    (src / "auditor" / "checks" / "cuda_synchronize.py").unlink()  # its [effects] row is still there
    with pytest.raises(ScaffoldError, match="already has an \\[effects\\] row"):
        new_rule("cuda-synchronize", "torch.cuda.other", "cuda-api", "major", "x", None, src)
    with pytest.raises(ScaffoldError, match="exists: choose another name"):
        new_rule("cuda-graphs", "torch.cuda.other", "cuda-api", "major", "x", None, src)
    with pytest.raises(ScaffoldError, match="already has an \\[\\[api\\]\\] row"):
        new_rule("acme-sync-call", "torch.cuda.synchronize", "cuda-api", "major", "x", None, src)
    with pytest.raises(ScaffoldError, match="kebab-case"):
        new_rule("Foo", "torch.cuda.x", "cuda-api", "major", "x", None, src)
    with pytest.raises(ScaffoldError, match="not a source checkout"):
        new_rule("acme-foo-call", "torch.cuda.x", "cuda-api", "major", "x", None, tmp_path / "nowhere")
