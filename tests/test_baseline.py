"""Baselines: record today's lock-in, fail only on what is new; fingerprints survive code moving,
a second identical finding is new, fixed findings are counted as stale, unreadable files can be
recorded, and --fail-on-regression compares scores with the baseline's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from auditor import targets
from auditor.cli import main
from auditor.config import ConfigError
from auditor.gates.baseline import load_baseline

OLD = "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "train.py").write_text(OLD, encoding="utf-8")
    (root / "src" / "py2.py").write_text("print 'hello'\nmodel.cuda()\n", encoding="utf-8")  # Python 2: a parse error
    monkeypatch.chdir(root)
    return root


def audit(capsys, *args: str) -> tuple[int, dict, str]:
    code = main([".", "--format", "json", "--no-cache", "--select", "LK101,LK102,LK204", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


def write_baseline(capsys, path: str = "lockin-baseline.json") -> None:
    code, _, err = audit(capsys, "--write-baseline", path)
    assert code == 0 and f"to the baseline {path}" in err


def test_baseline_file_is_readable_and_line_free(repo, capsys):
    write_baseline(capsys)
    document = json.loads((repo / "lockin-baseline.json").read_text(encoding="utf-8"))
    assert document["tool"] == "lockin-auditor" and document["format"] == 1
    assert sorted((e["path"], e["rule"], e["occurrence"]) for e in document["findings"]) == [
        ("src/train.py", "LK101", 0), ("src/train.py", "LK102", 0)]
    assert document["errors"] == [{"path": "src/py2.py", "kind": "parse"}]
    assert set(document["scores"]) == {"overall", *targets.names()}
    assert load_baseline(str(repo / "lockin-baseline.json")).fingerprints


def test_moved_code_stays_known_and_new_lock_in_fails(repo, capsys):
    write_baseline(capsys)
    moved = '"""A docstring added above."""\n\n\n' + OLD.replace("import torch\n", "import torch\nimport os\n")
    (repo / "src" / "train.py").write_text(moved, encoding="utf-8")
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "minor")
    assert code == 0 and report["findings"] == [] and report["errors"] == []
    assert report["baseline"]["known"] == 2 and report["baseline"]["stale"] == 0 and report["baseline"]["known_errors"] == 1
    assert report["scores"]["cpu"] < 100  # the score still counts the old lock-in
    # The same line again is new (its occurrence index is 1), as is a new kind of finding.
    (repo / "src" / "train.py").write_text(moved + "model = Net().cuda()\ntorch.cuda.synchronize()\n", encoding="utf-8")
    code, report, err = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "minor")
    assert code == 1 and sorted(f["rule"] for f in report["findings"]) == ["LK102", "LK204"]
    assert "2 finding(s) at or above minor" in err


def test_fixed_findings_are_stale_and_drop_out_when_rewritten(repo, capsys):
    write_baseline(capsys)
    (repo / "src" / "train.py").write_text("import torch\nmodel = Net().to(device)\nx = torch.zeros(3, device='cuda')\n",
                                           encoding="utf-8")
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json")
    assert report["baseline"]["stale"] == 1 and report["findings"] == []
    write_baseline(capsys)
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json")
    assert report["baseline"]["stale"] == 0 and report["baseline"]["known"] == 1


def test_unreadable_files_fail_the_gate_unless_recorded(repo, capsys):
    code, report, err = audit(capsys, "--fail-on", "blocker")
    assert code == 1 and "1 file(s) could not be audited" in err
    write_baseline(capsys)
    assert audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "blocker")[0] == 0
    (repo / "src" / "broken.py").write_text("import torch\ndef f(:\n    x.cuda()\n", encoding="utf-8")
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "blocker")
    assert code == 1 and [e["path"] for e in report["errors"]] == ["src/broken.py"]


def test_configured_baseline_is_used_by_default(repo, capsys):
    (repo / "pyproject.toml").write_text('[tool.lockin-auditor]\nbaseline = "lockin-baseline.json"\n', encoding="utf-8")
    code, _, err = audit(capsys)
    assert code == 2 and "not found" in err and "--write-baseline" in err
    write_baseline(capsys)
    code, report, _ = audit(capsys)
    assert report["baseline"]["path"].endswith("lockin-baseline.json") and report["findings"] == []
    code, report, _ = audit(capsys, "--no-baseline")
    assert report["baseline"] is None and len(report["findings"]) == 2


def test_baseline_paths_do_not_depend_on_where_audit_runs(repo, capsys, monkeypatch):
    write_baseline(capsys)
    monkeypatch.chdir(repo / "src")
    code = main(["train.py", "--format", "json", "--no-cache", "--select", "LK101,LK102",
                 "--baseline", "../lockin-baseline.json", "--fail-on", "info"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["findings"] == [] and report["baseline"]["known"] == 2


def test_fail_on_regression(repo, capsys):
    write_baseline(capsys)
    assert audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on-regression")[0] == 0
    (repo / "src" / "kernel.cu").write_text("__global__ void k() {}\n", encoding="utf-8")
    code, report, err = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on-regression", "--select",
                              "LK101,LK102,LK401")
    assert code == 1 and "below the baseline's" in err and "--fail-on-regression" in err



def test_fail_on_regression_without_a_baseline_is_a_usage_error(repo, capsys):
    code, _, err = audit(capsys, "--fail-on-regression")
    assert code == 2 and err.count("\n") == 1 and "--baseline" in err and "--fail-on-regression" in err
    (repo / "lockin-auditor.toml").write_text("fail-on-regression = true\n", encoding="utf-8")
    code, _, err = audit(capsys)
    assert code == 2 and "fail-on-regression in" in err and "lockin-auditor.toml" in err
    # --no-baseline drops the configuration's baseline and its regression gate with it
    (repo / "lockin-auditor.toml").write_text('fail-on-regression = true\nbaseline = "b.json"\n', encoding="utf-8")
    assert audit(capsys, "--no-baseline")[0] == 0
    assert audit(capsys, "--no-baseline", "--fail-on-regression")[0] == 2


def test_regression_if_baseline_replaces_the_command_lines_threshold(repo, capsys):
    write_baseline(capsys)
    assert audit(capsys, "--fail-under", "99")[0] == 1  # the legacy lock-in is below 99
    assert audit(capsys, "--fail-under", "99", "--regression-if-baseline")[0] == 1  # no baseline: the threshold
    with_baseline = ("--baseline", "lockin-baseline.json", "--fail-under", "99", "--regression-if-baseline")
    code, report, _ = audit(capsys, *with_baseline)
    assert code == 0 and report["gate"]["passed"]
    (repo / "src" / "kernel.cu").write_text("__global__ void k() {}\n", encoding="utf-8")
    code, _, err = audit(capsys, *with_baseline, "--select", "LK101,LK102,LK401")
    assert code == 1 and "below the baseline's" in err and "--fail-under" not in err
    # a threshold the configuration sets (the hook with `args: []`) stays a gate
    (repo / "src" / "kernel.cu").unlink()
    (repo / "lockin-auditor.toml").write_text("fail-under = 99\n", encoding="utf-8")
    code, _, err = audit(capsys, "--baseline", "lockin-baseline.json", "--regression-if-baseline")
    assert code == 1 and "below" in err and "fail-under" in err


@pytest.mark.parametrize("content", ["not json", '{"tool": "other"}', '{"tool": "lockin-auditor", "format": 99}',
                                     '{"tool": "lockin-auditor", "format": 1, "findings": [{"x": 1}]}'])
def test_a_broken_baseline_is_a_clear_error(repo, content):
    (repo / "b.json").write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match="--write-baseline"):
        load_baseline(str(repo / "b.json"))


# -- moved and renamed files (auditor.gates.moves) -----------------------------------------------------

MORE = OLD + "torch.cuda.synchronize()\nmodel.half().cuda()\n"


def test_a_plain_rename_keeps_the_baseline(repo, capsys):
    """No git here (the fixture's .git is an empty folder): the moved file is matched by its content."""
    (repo / "src" / "train.py").write_text(MORE, encoding="utf-8")
    write_baseline(capsys)
    (repo / "src" / "train.py").rename(repo / "src" / "trainer.py")
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "info")
    assert code == 0 and report["findings"] == [] and report["baseline"]["stale"] == 0
    assert report["baseline"]["known"] == 4 and report["baseline"]["moved"] == [
        {"from": "src/train.py", "to": "src/trainer.py"}]
    text = main([".", "--no-cache", "--select", "LK101,LK102,LK204", "--baseline", "lockin-baseline.json",
                 "--color", "never"])
    assert text == 0 and "moved since the baseline (its findings stay known): src/train.py -> src/trainer.py" in \
        capsys.readouterr().out
    # moved and edited: the old lock-in stays known, the new line is new
    (repo / "lib").mkdir()
    (repo / "src" / "trainer.py").rename(repo / "lib" / "loop.py")
    (repo / "lib" / "loop.py").write_text('"""moved"""\n' + MORE + "y = z.cuda()\n", encoding="utf-8")
    code, report, err = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "info")
    assert code == 1 and [(f["path"], f["line"]) for f in report["findings"]] == [("lib/loop.py", 7)]
    assert report["baseline"]["known"] == 4 and report["baseline"]["stale"] == 0


def test_a_copy_or_a_small_overlap_is_not_a_move(repo, capsys):
    (repo / "src" / "train.py").write_text(MORE, encoding="utf-8")
    write_baseline(capsys)
    # a copy: the original still exists, so the copy's lock-in is new
    (repo / "src" / "copy.py").write_text(MORE, encoding="utf-8")
    report = audit(capsys, "--baseline", "lockin-baseline.json")[1]
    assert {f["path"] for f in report["findings"]} == {"src/copy.py"} and report["baseline"]["moved"] == []
    (repo / "src" / "copy.py").unlink()
    # the original gone, but the new file holds one of its four findings: a new file, not a move
    (repo / "src" / "train.py").unlink()
    (repo / "src" / "other.py").write_text("import torch\nmodel = Net().cuda()\nw = 1\n", encoding="utf-8")
    report = audit(capsys, "--baseline", "lockin-baseline.json")[1]
    assert [f["path"] for f in report["findings"]] == ["src/other.py"] and report["baseline"]["stale"] == 4
    # two files share one old file's lock-in: the one holding most of it takes the move
    (repo / "src" / "other.py").write_text(OLD + "torch.cuda.synchronize()\n", encoding="utf-8")
    (repo / "src" / "half.py").write_text(OLD, encoding="utf-8")
    report = audit(capsys, "--baseline", "lockin-baseline.json")[1]
    assert report["baseline"]["moved"] == [{"from": "src/train.py", "to": "src/other.py"}]
    assert {f["path"] for f in report["findings"]} == {"src/half.py"} and report["baseline"]["stale"] == 1


def test_a_baseline_never_looks_outside_its_folder(repo, capsys):
    """A baseline entry pointing out of the repository is never looked up on disk, so it never
    lends its findings to a file here."""
    (repo / "src" / "train.py").write_text(MORE, encoding="utf-8")
    write_baseline(capsys)
    document = json.loads((repo / "lockin-baseline.json").read_text(encoding="utf-8"))
    for entry in document["findings"]:
        entry["path"], entry["fingerprint"] = "../elsewhere/train.py", "0" * 20 + entry["fingerprint"][20:]
    (repo / "lockin-baseline.json").write_text(json.dumps(document), encoding="utf-8")
    report = audit(capsys, "--baseline", "lockin-baseline.json")[1]
    assert report["baseline"]["moved"] == [] and report["baseline"]["known"] == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_mv_keeps_the_baseline(tmp_path, monkeypatch, capsys):
    root = tmp_path / "checkout"
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(MORE, encoding="utf-8")
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    monkeypatch.chdir(root)
    write_baseline(capsys)
    git("add", "-A")
    git("commit", "-qm", "base")
    (root / "pkg").mkdir()
    git("mv", "src/train.py", "pkg/train_loop.py")
    git("commit", "-qm", "move")
    assert (root / "pkg" / "train_loop.py").exists() and not (root / "src" / "train.py").exists()
    code, report, _ = audit(capsys, "--baseline", "lockin-baseline.json", "--fail-on", "info")
    assert code == 0 and report["findings"] == [] and report["baseline"]["known"] == 4
    assert report["baseline"]["moved"] == [{"from": "src/train.py", "to": "pkg/train_loop.py"}]
    # the pre-commit batch names only the moved file: the same answer
    code = main(["pkg/train_loop.py", "--format", "json", "--no-cache", "--select", "LK101,LK102,LK204",
                 "--baseline", "lockin-baseline.json", "--fail-on", "info"])
    assert code == 0 and json.loads(capsys.readouterr().out)["findings"] == []
