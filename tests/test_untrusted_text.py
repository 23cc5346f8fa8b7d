"""What a line is, everywhere: only `\\n`, `\\r\\n` and a lone `\\r` end one (Python's rule), never the
other characters `str.splitlines()` breaks at (U+2028, U+2029, form feed, `\\x1c`-`\\x1e`, NEL).
And text no codec should produce stays an error entry of its file (issue 20: D16, D17, D21)."""

from __future__ import annotations

import json

import pytest
from test_untrusted import errors_of, findings_of, run_scan, write

from auditor.cli import main

SEPARATORS = ["\u2028", "\u2029", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\x0b"]


@pytest.mark.parametrize("separator", SEPARATORS)
def test_add_noqa_writes_on_the_line_of_the_finding_and_keeps_every_character(tmp_path, monkeypatch, capsys, separator):
    """D16: --add-noqa split lines with str.splitlines(): the comment went on the wrong line and
    the separators were deleted."""
    text = f"import torch\n# one {separator} two\nx = 1  # {separator}\ntorch.cuda.synchronize()\nm.cuda()\n"
    (tmp_path / "a.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([".", "--no-cache", "--add-noqa"]) == 0
    capsys.readouterr()
    written = (tmp_path / "a.py").read_text(encoding="utf-8")
    assert written.count(separator) == text.count(separator)
    assert written.split("\n") == [*text.split("\n")[:3], "torch.cuda.synchronize()  # noqa: LK204",
                                   "m.cuda()  # noqa: LK102", ""]
    assert main([".", "--no-cache", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_add_noqa_in_a_requirements_file_with_a_form_feed(tmp_path, monkeypatch, capsys):
    text = "torch\n# \x0c page\ncupy-cuda12x\n"
    (tmp_path / "requirements.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--add-noqa"])
    capsys.readouterr()
    assert (tmp_path / "requirements.txt").read_text() == "torch\n# \x0c page\ncupy-cuda12x  # noqa: LK504\n"


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True) if "\n" in source else source} for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


@pytest.mark.parametrize("separator", SEPARATORS)
def test_notebook_cells_with_separators_are_read_line_by_line(tmp_path, separator):
    """D17: a cell holding one of them became a parse error and the notebook's findings were lost."""
    source = f"import torch\n# a {separator} b\ntorch.cuda.synchronize()\n"
    notebook = json.dumps({"cells": [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import torch\n", f"# a {separator} b\n", "torch.cuda.synchronize()\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source + "m.cuda()\n"},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    result = run_scan(write(tmp_path, {"nb.ipynb": notebook}))
    assert result.errors == []
    assert sorted((f.cell, f.line, f.rule) for f in result.findings) == [
        (1, 3, "LK204"), (2, 3, "LK204"), (2, 4, "LK102")]


def test_fixing_a_notebook_keeps_jupyters_line_lists(tmp_path, monkeypatch, capsys):
    text = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": ["import torch\n", "# a \u2028 b\r\n", "c = torch.cuda.memory_cached()\n"]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1, ensure_ascii=False) + "\n"
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--fix"])
    capsys.readouterr()
    cell = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"][0]
    assert cell["source"] == ["import torch\n", "# a \u2028 b\r\n", "c = torch.cuda.memory_reserved()\n"]


def test_a_lone_surrogate_in_a_notebook_cell_is_read_around(tmp_path):
    """D21: `"\\ud800"` in a cell's JSON was an internal error; it becomes one U+FFFD (positions stay)."""
    notebook = _notebook("import torch\nx = 'a\\ud800b'\ntorch.cuda.synchronize()\n").replace("\\\\ud800", "\\ud800")
    assert "\\ud800" in notebook and "\\\\ud800" not in notebook
    result = run_scan(write(tmp_path, {"nb.ipynb": notebook}))
    assert result.errors == [] and [(f.cell, f.line, f.rule) for f in result.findings] == [(1, 3, "LK204")]


@pytest.mark.parametrize(("cookie", "body", "says"), [
    ("punycode", b"import torch\ntorch.cuda.synchronize()\n", "cannot decode as punycode"),
    ("unicode_escape", b"x = 1  # \\ud800\nimport torch\ntorch.cuda.synchronize()\n", "lone surrogate"),
    ("rot13", b"import torch\ntorch.cuda.synchronize()\n", "unknown encoding"),
    ("utf-16-le", b"import torch\n", "decode"),
])
def test_codecs_that_fail_their_own_way_are_decode_errors(tmp_path, cookie, body, says):
    """D21: `# coding: punycode` was an internal error."""
    result = run_scan(write(tmp_path, {"p.py": f"# coding: {cookie}\n".encode() + body, "ok.py": b"import torch\nm.cuda()\n"}))
    kind, message = errors_of(result)["p.py"]
    assert kind == "decode" and says in message, message
    assert findings_of(result, "ok.py") == [(2, "LK102")]
