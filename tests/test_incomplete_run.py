"""A run in which files fail with an internal error (the auditor's own bug) never reports a clean
score or `runs`: its scores are withheld, a verdict that would not be `fails` is `unknown`, and it
exits 2 whatever the gates (and --exit-zero) say."""

from __future__ import annotations

import json
import os

import pytest

import auditor.pipeline.kind_checks as kind_checks
from auditor import targets
from auditor.cli import main


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "boom.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("import torch\nx = torch.ones(2)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    real = kind_checks.scan_python  # what the Python check calls

    def buggy(path, *args, **kwargs):
        if path.endswith("boom.py"):
            raise KeyError("simulated bug")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(kind_checks, "scan_python", buggy)
    return tmp_path


def audit(capsys, *args: str) -> tuple[int, str, str]:
    code = main([".", "--no-cache", "--isolated", "--jobs", "1", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_file_failing_gives_no_score_and_no_runs(repo, capsys):
    code, out, err = audit(capsys, "--format", "json")
    report = json.loads(out)
    assert code == 2
    assert [(e["path"], e["kind"]) for e in report["errors"]] == [("boom.py", "internal")]
    assert report["incomplete"].startswith("1 file(s) failed with an internal error, so their findings are missing "
                                           "(first: boom.py)")
    assert report["scores"] == {"overall": None, **dict.fromkeys(targets.names())}
    assert set(report["grades"].values()) == {None}
    for verdict in report["verdicts"].values():
        assert verdict == {"verdict": "unknown", "reasons": [
            {"rule": None, "path": "boom.py", "line": None,
             "why": "not checked (internal error): what it holds is unknown"}]}
    assert report["gate"]["passed"] is False and report["gate"]["exit_code"] == 2
    assert report["gate"]["checks"] == ["complete"] and report["gate"]["reasons"] == [report["incomplete"]]
    assert err.count("\n") == 1 and "no score is given, and a verdict that does not fail is unknown" in err


def test_what_fails_still_fails_and_the_rest_is_unknown(repo, capsys):
    (repo / "train.py").write_text("import torch\nmodel = Net().cuda()\n", encoding="utf-8")
    code, out, _ = audit(capsys, "--format", "json", "--fail-under", "0", "--exit-zero")
    report = json.loads(out)
    assert code == 2  # --exit-zero forgives a gate, not a run that missed files
    verdicts = {t: v["verdict"] for t, v in report["verdicts"].items()}
    assert verdicts == {t: "unknown" if targets.has_role(t, "accepts-cuda-calls") else "fails" for t in targets.names()}
    assert report["findings"] and report["scores"]["overall"] is None


@pytest.mark.parametrize("fmt", ["text", "concise", "markdown"])
def test_the_human_formats_say_the_scores_are_withheld(repo, capsys, fmt):
    code, out, _ = audit(capsys, "--format", fmt)
    assert code == 2 and "withheld" in out.lower()
    assert "100.0" not in out  # no clean score anywhere


def test_a_baseline_written_from_an_incomplete_run_records_no_scores(repo, capsys):
    code, _, err = audit(capsys, "--write-baseline", "base.json")
    assert code == 2 and "the baseline records no scores" in err
    assert json.loads((repo / "base.json").read_text(encoding="utf-8"))["scores"] == {}


def test_a_parse_error_is_not_an_internal_error(tmp_path, capsys, monkeypatch):
    """A file that is broken is the file's problem: the run scores the rest, as before."""
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _ = audit(capsys, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["incomplete"] is None and report["scores"]["overall"] == 100.0
    assert os.path.exists(tmp_path / "broken.py")
