"""`audit - --stdin-filename PATH` (issue 18 item 7): the source from standard input, checked as the
file PATH (its kind, configuration and reported path), in real `python -m auditor` runs."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from auditor.report import REPORTERS

LOCKED = 'import torch\nx = torch.zeros(3).cuda()\ndevice = torch.device("cuda")\n'
# Trap: "cuda" only in a comment, a docstring and a log string is not lock-in.
TRAPS = '"""Runs on cuda or anything else."""\nimport logging\n\n# move to cuda later\nlogging.info("cuda found")\n'
FIXABLE = ("import torch\nfrom torch.cuda.amp import autocast\n\n"
           "def step(model, x):\n    with autocast():\n        return model(x)\n")
NOTEBOOK = json.dumps({"cells": [
    {"cell_type": "markdown", "metadata": {}, "source": ["cuda in markdown is prose\n"]},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
     "source": ["import torch\n", "model = torch.nn.Linear(2, 2).cuda()\n"]}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
REQUIREMENTS = "torch==2.3.0+cu121\nnvidia-cudnn-cu12==9.1.0.70\nnumpy\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.6\n", encoding="utf-8")
    return tmp_path


def audit(cwd: Path, source: str | bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    data = source.encode("utf-8") if isinstance(source, str) else source
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, input=data, capture_output=True,
                          timeout=120, check=False)


def findings(run: subprocess.CompletedProcess[bytes]) -> list[dict]:
    assert run.returncode in (0, 1), run.stderr.decode()
    return json.loads(run.stdout)["findings"]


def test_stdin_is_checked_as_the_named_file_and_never_read_from_disk(repo: Path) -> None:
    (repo / "pkg" / "model.py").write_text("print('clean file on disk')\n", encoding="utf-8")
    found = findings(audit(repo, LOCKED, "-", "--stdin-filename", "pkg/model.py", "--format", "json"))
    assert {(f["rule"], f["path"], f["line"]) for f in found} == {("LK102", "pkg/model.py", 2),
                                                                 ("LK101", "pkg/model.py", 3)}
    assert not (repo / ".lockin-auditor-cache").exists() and not list(repo.glob(".*cache*"))  # no cache for stdin


def test_the_named_file_need_not_exist(repo: Path) -> None:
    found = findings(audit(repo, LOCKED, "-", "--stdin-filename", "pkg/new_module.py", "--format", "json"))
    assert {f["path"] for f in found} == {"pkg/new_module.py"} and len(found) == 2


def test_traps_in_comments_docstrings_and_logs_are_no_findings(repo: Path) -> None:
    run = audit(repo, TRAPS, "-", "--stdin-filename", "pkg/quiet.py", "--format", "json")
    assert findings(run) == [] and run.returncode == 0


@pytest.mark.parametrize("fmt", sorted(REPORTERS))
def test_every_format_names_the_stdin_filename(repo: Path, fmt: str) -> None:
    run = audit(repo, LOCKED, "-", "--stdin-filename", "pkg/model.py", "--format", fmt)
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    assert "pkg/model.py" in out and "LK102" in out and "<stdin>" not in out and "\n-:" not in out
    if fmt == "json":
        assert json.loads(out)["findings"][0]["path"] == "pkg/model.py"
    elif fmt == "sarif":
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(out)["runs"][0]["results"]}
        assert uris and all(uri.endswith("pkg/model.py") for uri in uris)
    elif fmt == "gitlab":
        assert {item["location"]["path"] for item in json.loads(out)} == {"pkg/model.py"}
    elif fmt == "json-lines":
        assert {json.loads(line)["path"] for line in out.splitlines() if '"rule"' in line} == {"pkg/model.py"}
    elif fmt == "junit":
        assert ET.fromstring(out) is not None
    elif fmt == "github":
        assert "file=pkg/model.py,line=2" in out


def test_a_notebook_from_stdin(repo: Path) -> None:
    found = findings(audit(repo, NOTEBOOK, "-", "--stdin-filename", "pkg/explore.ipynb", "--format", "json"))
    assert [(f["rule"], f["path"]) for f in found] == [("LK102", "pkg/explore.ipynb")]


def test_a_requirements_file_from_stdin(repo: Path) -> None:
    found = findings(audit(repo, REQUIREMENTS, "-", "--stdin-filename", "requirements-gpu.txt", "--format", "json"))
    assert {f["path"] for f in found} == {"requirements-gpu.txt"}
    assert len({f["line"] for f in found}) == 2  # the +cu121 wheel and the nvidia-* package, not numpy
    # the same text named as Python is Python: no requirement findings
    assert findings(audit(repo, REQUIREMENTS, "-", "--stdin-filename", "pkg/reqs.py", "--format", "json")) == []


def test_the_configuration_is_found_from_the_named_files_folder(repo: Path) -> None:
    sub = repo / "service"
    sub.mkdir()
    (sub / "lockin-auditor.toml").write_text('select = ["LK101"]\n', encoding="utf-8")
    inside = findings(audit(repo, LOCKED, "-", "--stdin-filename", "service/app.py", "--format", "json"))
    assert [f["rule"] for f in inside] == ["LK101"]
    outside = findings(audit(repo, LOCKED, "-", "--stdin-filename", "pkg/app.py", "--format", "json"))
    assert sorted(f["rule"] for f in outside) == ["LK101", "LK102"]


@pytest.mark.parametrize("args, says", [
    (["-"], "add --stdin-filename"),
    (["pkg", "--stdin-filename", "pkg/a.py"], "give `-` as the path"),
    (["-", "pkg", "--stdin-filename", "pkg/a.py"], "only path"),
    (["-", "--stdin-filename", "pkg/notes.xyz"], "not a kind of file"),
    (["-", "--stdin-filename", "pkg/a.py", "--add-noqa"], "--add-noqa works on files"),
])
def test_usage_errors_exit_2_with_one_line(repo: Path, args: list[str], says: str) -> None:
    run = audit(repo, LOCKED, *args)
    err = run.stderr.decode()
    assert run.returncode == 2 and run.stdout == b""
    assert err.count("\n") == 1 and err.startswith("audit: error: ") and says in err, err


def test_fix_writes_the_fixed_source_to_stdout_as_the_file_based_fix_does(repo: Path, tmp_path_factory) -> None:
    run = audit(repo, FIXABLE, "-", "--stdin-filename", "pkg/train.py", "--fix")
    assert run.returncode == 0, run.stderr.decode()
    assert not (repo / "pkg" / "train.py").exists()  # nothing written to disk
    other = tmp_path_factory.mktemp("filed")
    (other / "pkg").mkdir()
    (other / "requirements.txt").write_text("torch>=2.6\n", encoding="utf-8")
    (other / "pkg" / "train.py").write_text(FIXABLE, encoding="utf-8")
    filed = audit(other, b"", "pkg/train.py", "--fix", "--no-cache")
    assert filed.returncode in (0, 1), filed.stderr.decode()
    fixed = (other / "pkg" / "train.py").read_bytes()
    assert fixed != FIXABLE.encode() and run.stdout == fixed
    assert "fixed 1 finding in 1 file" in run.stderr.decode()


def test_fix_with_nothing_to_fix_echoes_the_input(repo: Path) -> None:
    run = audit(repo, TRAPS, "-", "--stdin-filename", "pkg/quiet.py", "--fix")
    assert run.returncode == 0 and run.stdout == TRAPS.encode()


def test_diff_prints_the_diff_and_exits_1(repo: Path) -> None:
    run = audit(repo, FIXABLE, "-", "--stdin-filename", "pkg/train.py", "--diff")
    out = run.stdout.decode()
    assert run.returncode == 1 and "--- a/pkg/train.py" in out and "-from torch.cuda.amp import autocast" in out
    assert not (repo / "pkg" / "train.py").exists()


def test_oversized_stdin_is_one_error_entry(repo: Path) -> None:
    big = LOCKED + "# padding\n" * 200_000  # ~2 MB, over a 1 MB limit
    run = audit(repo, big, "-", "--stdin-filename", "pkg/big.py", "--max-file-size", "1", "--format", "json")
    report = json.loads(run.stdout)
    assert report["findings"] == []
    assert [(e["path"], e["kind"]) for e in report["errors"]] == [("pkg/big.py", "too-large")]
    concise = audit(repo, big, "-", "--stdin-filename", "pkg/big.py", "--max-file-size", "1", "--format", "concise")
    lines = [line for line in concise.stdout.decode().splitlines() if "pkg/big.py" in line]
    assert len(lines) == 1 and "limit" in lines[0]
