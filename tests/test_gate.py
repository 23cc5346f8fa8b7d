"""The gate never passes silently: a run that audited nothing says so and fails a gate, files that
could not be audited fail it, a named script with a Python shebang is read, and a pre-commit
batch prints findings only and gates at minor."""

from __future__ import annotations

import json
import os
import sys

import pytest

from auditor.cli import main
from auditor.gates.judge import GateInput, evaluate

BAD = "import torch\nm = M().cuda()\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--no-cache", "--isolated"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args", [["empty"], [".", "--exclude", "*"], ["/dev/null"]], ids=["empty", "exclude-all", "devnull"])
def test_nothing_audited_says_so_and_fails_a_gate(repo, capsys, args):
    (repo / "empty").mkdir()
    (repo / "a.py").write_text(BAD, encoding="utf-8")
    code, _, err = run(capsys, *args)
    assert code == 0 and ("no file audited" in err)
    code, _, err = run(capsys, *args, "--fail-under", "50")
    assert code == 1 and "no file was audited" in err


@pytest.mark.skipif(not os.path.exists("/dev/stdin"), reason="needs /dev/stdin")
def test_dev_stdin_is_named_and_not_read(repo, capsys):
    code, _, err = run(capsys, "/dev/stdin", "--fail-on", "minor")
    assert code == 1 and "skipped /dev/stdin: not a regular file" in err


def test_a_script_with_a_python_shebang_is_read(repo, capsys):
    (repo / "train").write_text("#!/usr/bin/env python3\n" + BAD, encoding="utf-8")
    (repo / "notes").write_text("#!/bin/sh\necho cuda\n", encoding="utf-8")
    code, out, err = run(capsys, "train", "notes", "--format", "concise", "--select", "LK102")
    assert "train:3:" in out and "LK102" in out
    assert "skipped notes: not a kind of file audit reads" in err


def test_unreadable_files_fail_a_gate(repo, capsys):
    (repo / "old.py").write_text("import torch\nprint 'x'\nm.cuda()\n", encoding="utf-8")  # Python 2
    assert run(capsys, ".")[0] == 0  # no gate: listed, not failed
    code, _, err = run(capsys, ".", "--fail-on", "blocker")
    assert code == 1 and "1 file(s) could not be audited" in err
    (repo / "new.py").write_text("import torch\n", encoding="utf-8")
    assert run(capsys, ".", "--fail-on", "blocker", "--exclude", "old.py")[0] == 0


def test_pre_commit_batch_prints_findings_only_and_gates_at_minor(repo, capsys, monkeypatch):
    (repo / "a.py").write_text(BAD, encoding="utf-8")
    (repo / "b.py").write_text("import torch\nif torch.cuda.is_available():\n    pass\n", encoding="utf-8")
    monkeypatch.setenv("PRE_COMMIT", "1")
    for fmt in ("text", "concise"):
        code, out, err = run(capsys, "a.py", "b.py", "--format", fmt)
        assert code == 1 and "at or above minor" in err
        assert "score" not in out.lower() and "Found" not in out and "category" not in out
        assert "LK102" in out
    # The score hook names the repository: it gets the score and no implicit severity gate.
    code, out, _ = run(capsys, ".", "--format", "text", "--summary-only", "--fail-under", "10")
    assert code == 0 and "Portability score" in out
    # The configuration's fail-on wins over the hook's default.
    (repo / "lockin-auditor.toml").write_text('fail-on = "blocker"\n', encoding="utf-8")
    assert main(["a.py", "--no-cache"]) == 0
    capsys.readouterr()


def test_pre_commit_batch_of_excluded_files_has_nothing_to_check(repo, capsys, monkeypatch):
    (repo / "vendor").mkdir()
    (repo / "vendor" / "x.py").write_text(BAD, encoding="utf-8")
    (repo / "lockin-auditor.toml").write_text('extend-exclude = ["vendor/"]\n', encoding="utf-8")
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert main(["vendor/x.py", "--force-exclude", "--no-cache"]) == 0
    assert "every file given is excluded" in capsys.readouterr().err
    assert main(["vendor/x.py", "--no-cache"]) == 1  # named without --force-exclude, it is read


def test_evaluate_directly():
    outcome = evaluate(GateInput([], [], {"overall": 70.0, "cpu": 50.0}, files=3), (("cpu", 60.0),), None, False)
    assert not outcome.passed and outcome.exit_code == 1 and outcome.checks == ["fail-under cpu 60"]
    assert evaluate(GateInput([], [], {"overall": 70.0}, files=3), (("overall", 60.0),), None, False).passed
    assert evaluate(GateInput([], [], {}, files=0), (), None, False).passed  # no gate asked: nothing to judge
    zero = evaluate(GateInput([], [], {}, files=0), (), "minor", False, exit_zero=True)
    assert not zero.passed and zero.exit_code == 0


def test_the_installed_entry_point_under_pre_commit(repo):
    """Through a real process, as pre-commit runs it: concise lines on stdout, exit 1."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (repo / "a.py").write_text(BAD, encoding="utf-8")
    env = {**os.environ, "PRE_COMMIT": "1", "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--force-exclude", "a.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout.startswith("a.py:2:") and "Traceback" not in proc.stderr
    report = subprocess.run([sys.executable, "-m", "auditor", ".", "--format", "json"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=120)
    assert json.loads(report.stdout)["gate"]["passed"] is True
