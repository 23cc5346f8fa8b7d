"""What a scanned repository writes into a report stays text: a file name or a code line cannot
start a GitHub workflow command, reach a terminal as an escape sequence, end a markdown code span,
start a markdown block or put a line of its own into JUnit failure text (issue 20: D14, D15, D28).
Reports are checked with the parsers that read them (markdown-it, ElementTree, GitHub's
command syntax)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest
from markdown_it import MarkdownIt

from auditor.cli import main

SYNC = "import torch\ntorch.cuda.synchronize()\n"
HOSTILE_NAMES = [
    "x\n::error title=INJECTED::pwned.py",  # a workflow command on a line of its own
    "\x1b]0;owned\x07\x1b[2Jterm.py",  # a terminal title, a screen clear, BEL
    "c1\u0085\u009b31mnext.py",  # C1 controls: NEL and CSI
    "sep\u2028arator\u202egnp.py",  # a line separator and a right-to-left override
    "``<img src=x onerror=alert(1)>``.py",  # two backticks closed a two-backtick code span
    "a\r# Gate passed.py",  # a CR started a new markdown block
    "pipe|cell.py",
]
CONTROLS = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A)] + ["\u2028", "\u202e"]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for index, name in enumerate(HOSTILE_NAMES):
        (tmp_path / name).write_text(SYNC + f"x = {name!r}  # \x1b[31m{index}\n")
    (tmp_path / "broken\n::warning::x.py").write_bytes(b"\x00\x01binary")  # an error entry with a hostile path
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, fmt: str) -> tuple[str, str]:
    main([".", "--no-cache", "--format", fmt])
    return capsys.readouterr()


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "junit", "markdown"])
def test_no_control_character_of_the_repository_reaches_the_output(repo, capsys, fmt):
    out, err = run(capsys, fmt)
    assert "INJECTED" in out or "INJECTED" in json.dumps(out)  # the names are reported ...
    for text in (out, err):
        assert not [c for c in CONTROLS if c in text], fmt  # ... with their controls escaped
    if fmt != "github":  # the github format's own lines are commands; nothing else may start one
        assert not [line for line in (out + err).split("\n") if line.lstrip().startswith("::")]


def test_github_annotations_are_one_command_per_line(repo, capsys):
    out, _ = run(capsys, "github")
    lines = out.rstrip("\n").split("\n")
    assert lines and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    report = json.loads(run(capsys, "json")[0])
    assert len(lines) == len(report["findings"]) + len(report["errors"])  # no value broke a line
    assert any("x%0A%3A%3Aerror title=INJECTED%3A%3Apwned.py" in line for line in lines)


def test_markdown_keeps_every_name_inside_its_code_span(repo, capsys):
    out, _ = run(capsys, "markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    inline = [child for token in tokens if token.children for child in token.children]
    assert not [t for t in [*tokens, *inline] if t.type in ("html_inline", "html_block")]
    assert [t.markup for t in tokens if t.type == "heading_open"] == ["##", "###", "###"]  # ours only
    spans = " ".join(t.content for t in inline if t.type == "code_inline")
    assert "``<img src=x onerror=alert(1)>``.py" in spans and "\\|" not in spans.replace("pipe\\|cell", "")
    widths: list[int] = []  # cells per table row: no `|` in a name split its cell
    for token in tokens:
        if token.type == "tr_open":
            widths.append(0)
        elif token.type in ("th_open", "td_open"):
            widths[-1] += 1
        elif token.type == "table_close":
            assert len(set(widths)) == 1, widths
            widths = []


def test_junit_failure_text_never_starts_a_line_with_a_value(repo, capsys):
    out, _ = run(capsys, "junit")
    tree = ET.fromstring(out.split("\n", 1)[1])
    texts = [element.text or "" for element in tree.iter() if element.tag in ("failure", "error")]
    assert texts
    for text in texts:
        for line in text.split("\n"):
            assert line.startswith(("LK", "at ", "code: ", "fix: ", "not audited: ", "gate: ")), line


def test_stderr_lines_are_printable(tmp_path, capsys, monkeypatch):
    """Warnings name paths too (a skipped link, a file given that is not read)."""
    name = "n\n::error::stderr\x1b[0m.md"
    (tmp_path / name).write_text("x\n")
    monkeypatch.chdir(tmp_path)
    main([name, "--no-cache"])
    _, err = capsys.readouterr()
    assert "\x1b" not in err and not [line for line in err.split("\n") if line.startswith("::")]
    assert err.count("\n") == err.count("audit:")  # one line per message


def test_the_json_report_keeps_names_exact(repo, capsys):
    out, _ = run(capsys, "json")
    report = json.loads(out)
    assert set(HOSTILE_NAMES) <= {f["path"] for f in report["findings"]}
    assert os.path.exists(next(f["path"] for f in report["findings"] if "INJECTED" in f["path"]))
