"""The text report's findings section is formatted by hand for speed; it must read exactly as
rich would print the same styled text, with and without colour, and never pass control codes on."""

from __future__ import annotations

import io

import pytest
from rich.text import Text

from auditor.config.settings import Settings
from auditor.model import Finding
from auditor.pipeline.scan import scan
from auditor.report.model import ScanResult
from auditor.report.text import SEVERITY_STYLE, _findings, make_console


def rich_findings(result: ScanResult, console) -> None:
    """The reference: the same layout through rich's own print, one line at a time."""
    current = None
    for f in result.findings:
        if f.path != current:
            current = f.path
            console.print()
            console.print(Text(f.path, style="bold underline"))
        where = f"cell {f.cell}:{f.line}:{f.column}" if f.cell is not None else f"{f.line}:{f.column}"
        mark = (" ", ("[*]", "bold green")) if f.fix is not None and f.fix.applicability == "safe" else ()
        console.print(Text.assemble((f"  {where} ", "dim"), (f.rule, "bold"), " ",
                                    (f"[{f.severity}]", SEVERITY_STYLE[f.severity]), *mark, f" {f.name}: ", f.message))
        if f.snippet:
            console.print(Text(f"      {f.snippet}", style="dim"))
        if f.suggestion:
            since = f" (torch >= {f.min_torch})" if f.min_torch else ""
            console.print(Text.assemble(("      fix: ", "green"), f.suggestion, (since, "dim")))
        if f.fix is not None and f.fix.applicability == "display":
            label, text = ("not fixed: ", f.fix.reason) if f.fix.reason else ("rewrite (shown only): ", f.fix.message)
            console.print(Text.assemble(("      " + label, "yellow"), text))


@pytest.fixture(scope="module")
def demo() -> ScanResult:
    return scan(["fixtures/demo-repo"], Settings(cache=False, jobs=1))


@pytest.mark.parametrize("color", ["always", "never", "auto"])
@pytest.mark.parametrize("no_color", [False, True])
def test_same_as_rich(demo, color, no_color, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    ours, theirs = io.StringIO(), io.StringIO()
    _findings(demo, make_console(ours, color))
    rich_findings(demo, make_console(theirs, color))
    assert len(demo.findings) > 10
    assert {f.fix.applicability for f in demo.findings if f.fix} == {"safe", "display"}  # both kinds of line
    assert ours.getvalue() == theirs.getvalue()
    assert ("\x1b[" in ours.getvalue()) == (color == "always")


def test_control_characters_are_shown_not_sent():
    finding = Finding("evil\x1b[2J.py", 1, 1, 1, 5, "LK101", "hardcoded-cuda-device", "device", "major",
                      "msg\x07", "fix\r", {}, None, 'x = "\x1b]0;title\x07cuda"\tz')
    out = io.StringIO()
    _findings(ScanResult(root=".", findings=[finding]), make_console(out, "always"))
    text = out.getvalue()
    assert "\x07" not in text and "\r" not in text and "\x1b[2J" not in text and "\x1b]" not in text
    assert "evil\\x1b[2J.py" in text and "\\x07" in text and "\t" in text
