"""Bad input never stops a run: each bad file becomes one entry in `errors` (path, kind,
message), the other files' findings are kept, and no traceback reaches the user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.checks.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
CORE = ["LK101", "LK102", "LK103", "LK201"]
GOOD = "import torch\nmodel = Net().cuda()\n"  # LK102 on line 2

BAD_FILES: dict[str, bytes] = {
    "py2.py": b'import torch\nprint "x"\nmodel.cuda()\n',
    "broken.py": b"import torch\ndef f(:\n    model.cuda()\n",
    "undecodable.py": b"import torch\ns = '\xff\xfe'\nmodel.cuda()\n",
    "bad_cookie.py": b"# -*- coding: klingon -*-\nmodel.cuda()\n",
    "binary.py": b"\x7fELF\x02\x01\x01\x00\x00cuda\x00\x00",
    "deep_brackets.py": b"model.cuda()\nz = " + b"(" * 3000 + b"1" + b")" * 3000 + b"\n",
    "deep_unary.py": b"model.cuda()\nz = " + b"-" * 50_000 + b"1\n",
    "long_chain.py": b"model.cuda()\nz = (" + b" +\n".join([b"a"] * 20_000) + b")\n",
}
EXPECTED_KIND = {
    "py2.py": "parse", "broken.py": "parse", "undecodable.py": "decode", "bad_cookie.py": "decode",
    "binary.py": "binary", "deep_brackets.py": "parse", "deep_unary.py": "parse", "long_chain.py": "parse",
}


def errors_by_path(result) -> dict[str, object]:
    return {e.path: e for e in result.errors}


@pytest.fixture
def scan_core(scan_source):
    def run(files: dict[str, str | bytes], **options):
        return scan_source({"good.py": GOOD, **files}, select=CORE, **options)

    return run


def assert_good_kept(result) -> None:
    good = [(f.line, f.rule) for f in result.findings if f.path == "good.py"]
    assert good == [(2, "LK102")], result.findings


@pytest.mark.parametrize("name", ["py2.py", "broken.py", "undecodable.py", "bad_cookie.py", "binary.py"])
def test_bad_file_becomes_error_entry(scan_core, name):
    result = scan_core({name: BAD_FILES[name]})
    error = errors_by_path(result)[name]
    assert error.kind == EXPECTED_KIND[name]
    assert error.message and "Traceback" not in error.message
    assert len(result.errors) == 1
    assert_good_kept(result)


def test_error_messages_say_where(scan_core):
    result = scan_core({name: BAD_FILES[name] for name in ("broken.py", "undecodable.py", "bad_cookie.py")})
    errors = errors_by_path(result)
    assert "line 2" in errors["broken.py"].message or "line 3" in errors["broken.py"].message
    assert "line 2" in errors["undecodable.py"].message
    assert "klingon" in errors["bad_cookie.py"].message


def spans(result, path: str) -> list[tuple[int, int, int, int]]:
    return [(f.line, f.column, f.end_line, f.end_column) for f in result.findings if f.path == path]


def test_bom_parses_with_correct_columns(scan_core):
    plain = b"import torch\nmodel = Net().cuda()\n"
    result = scan_core({"bom.py": b"\xef\xbb\xbf" + plain, "plain.py": plain})
    assert result.errors == []
    assert spans(result, "bom.py") == spans(result, "plain.py") != []
    assert [f.snippet for f in result.findings if f.path == "bom.py"] == ["model = Net().cuda()"]


def test_latin1_cookie_parses_and_counts_characters(scan_core):
    source = "# -*- coding: {} -*-\nimport torch\ns = 'é'; m = Net().cuda()\n"
    result = scan_core({"latin.py": source.format("latin-1").encode("latin-1"),
                        "utf8.py": source.format("utf-8").encode("utf-8")})
    assert result.errors == []
    assert spans(result, "latin.py") == spans(result, "utf8.py") != []
    line, column, _, end_column = spans(result, "latin.py")[0]
    assert line == 3 and "cuda" in "s = 'é'; m = Net().cuda()"[column - 1:end_column - 1]


def test_empty_and_comment_only_files(scan_core):
    result = scan_core({"empty.py": b"", "comments.py": b"# model.cuda()\n# torch.cuda.synchronize()\n",
                        "blank.py": b"\n\n   \n"})
    assert result.errors == []
    assert {f.path for f in result.findings} == {"good.py"}


def test_file_over_size_limit(scan_core):
    big = "import torch\n" + "x = 1\n" * 400 + "model.cuda()\n"
    result = scan_core({"huge.py": big}, max_bytes=1000)
    error = errors_by_path(result)["huge.py"]
    assert error.kind == "too-large" and "limit" in error.message
    assert_good_kept(result)


def test_unreadable_file(scan_core, monkeypatch):
    real_open = os.open

    def guarded_open(file, *args, **kwargs):
        if str(file).endswith("locked.py"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    result = scan_core({"locked.py": GOOD})
    error = errors_by_path(result)["locked.py"]
    assert error.kind == "read" and "Permission denied" in error.message
    assert_good_kept(result)


def test_symlink_loop(scan_core, tmp_path):
    os.symlink(tmp_path / "b.py", tmp_path / "a.py")
    os.symlink(tmp_path / "a.py", tmp_path / "b.py")
    result = scan_core({})
    assert {(e.path, e.kind) for e in result.errors} == {("a.py", "symlink-loop"), ("b.py", "symlink-loop")}
    assert_good_kept(result)


def test_moderately_deep_nesting_still_scans(scan_core):
    source = "import torch\nz = " + "[" * 150 + "]" * 150 + "\nm = Net().cuda()\n"
    result = scan_core({"nested.py": source})
    assert result.errors == []
    assert [f.line for f in result.findings if f.path == "nested.py"] == [3]


def test_malformed_pyproject_never_crashes(scan_source):
    result = scan_source({"good.py": GOOD, "pyproject.toml": "[project\nname = 'x'\ndependencies = [\n"})
    assert not [e for e in result.errors if e.kind == "internal"], result.errors
    assert any(f.path == "good.py" and f.rule == "LK102" for f in result.findings)
    if any("pyproject" in rule.file_kinds for rule in all_rules()):
        assert "pyproject.toml" in errors_by_path(result)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_survives_every_bad_file_without_traceback(tmp_path):
    """Through a real process: a crash in the native parser (segfault) would show up here."""
    (tmp_path / "good.py").write_text(GOOD)
    for name, data in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "empty.py").write_bytes(b"")
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 100_000 + "model.cuda()\n")
    proc = run_cli(".", "--format", "json", "--select", ",".join(CORE), "--max-file-size", "0.5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    kinds = {e["path"]: e["kind"] for e in report["errors"]}
    assert kinds == {**EXPECTED_KIND, "loop_a.py": "symlink-loop", "loop_b.py": "symlink-loop", "big.py": "too-large"}
    assert all(e["message"] for e in report["errors"])
    assert [(f["path"], f["line"], f["rule"]) for f in report["findings"]] == [("good.py", 2, "LK102")]


def test_cli_text_report_lists_errors(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "broken.py").write_bytes(BAD_FILES["broken.py"])
    proc = run_cli(".", "--select", ",".join(CORE), cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "broken.py" in proc.stdout and "good.py" in proc.stdout


def test_deep_chains_never_become_internal_errors(scan_source):
    files = {"attrs.py": "import torch\nx = a" + ".b" * 3000 + "\n",
             "calls.py": "import torch\nx = a" + ".b()" * 1500 + "\n",
             "ok.py": "import torch\nm.cuda()\n"}
    result = scan_source(files)
    assert all(e.kind == "parse" for e in result.errors), result.errors
    assert [f.path for f in result.findings] == ["ok.py"]
