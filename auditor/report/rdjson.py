"""`--format rdjson`: reviewdog's Diagnostic format (`reviewdog -f=rdjson`): one JSON object with
`source` {name, url} and `diagnostics`, each with a message, a location {path, range {start, end}}
(1-based lines; columns counted in UTF-8 bytes as reviewdog counts them, end exclusive), a
severity (ERROR, WARNING, INFO), a code {value, url} and, for a safe fix on the finding's own
line, that fix as a suggestion. Paths are the reported ones, relative to the working
directory: run reviewdog where `audit` ran. A notebook finding points at the `.ipynb` file's own
line (auditor.report.notebook_lines) and carries no suggestion (its edits are in cell lines).
Files that could not be audited are ERROR diagnostics with the code `lockin-auditor/KIND`."""

from __future__ import annotations

import json
from typing import TextIO

from auditor import TOOL_NAME
from auditor.model import Applicability, Finding
from auditor.read.text import SourceError, read_regular_file, split_lines
from auditor.report.model import Report
from auditor.report.notebook_lines import NotebookPlaces
from auditor.report.sarif import HELP_URI, INFORMATION_URI

SEVERITIES = {"blocker": "ERROR", "major": "ERROR", "minor": "WARNING", "info": "INFO"}


class _Lines:
    """The lines of the reported files, to count columns in UTF-8 bytes (read again, as a regular
    file, never through a link, within the run's size limit; an unreadable one keeps code points)."""

    def __init__(self, report: Report) -> None:
        self._paths = {s.display: s.path for s in report.result.files}
        self._max_bytes = report.settings.max_bytes
        self._cache: dict[str, list[str] | None] = {}

    def of(self, path: str) -> list[str] | None:
        if path not in self._cache:
            self._cache[path] = None
            source = self._paths.get(path)
            if source is not None:
                try:
                    self._cache[path] = split_lines(read_regular_file(source, self._max_bytes).decode("utf-8-sig"))
                except (SourceError, UnicodeDecodeError):
                    pass
        return self._cache[path]

    def position(self, text: list[str] | None, line: int, column: int) -> dict:
        if text is not None and 0 < line <= len(text) and column > 1:
            column = len(text[line - 1][:column - 1].encode("utf-8", "surrogatepass")) + 1
        return {"line": line, "column": column}


def _range(lines: _Lines, text: list[str] | None, line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"start": lines.position(text, line, column), "end": lines.position(text, end_line, end_column)}


def _suggestions(f: Finding, lines: _Lines, text: list[str] | None) -> list[dict]:
    """A safe fix whose edits are all on the finding's line, as one suggestion: the span from the
    first edit to the last with every edit applied (reviewdog applies each suggestion on its own,
    so a fix that also reaches another line, an import at the top, is not offered: half of it
    could break the code)."""
    fix = f.fix
    if f.cell is not None or fix is None or fix.applicability != Applicability.SAFE or not fix.edits or text is None:
        return []
    edits = sorted(fix.edits, key=lambda e: (e.column, e.end_column))
    if any(e.line != f.line or e.end_line != f.line for e in edits) or not 0 < f.line <= len(text):
        return []
    line = text[f.line - 1]
    start, end = edits[0].column, edits[-1].end_column
    if start < 1 or end - 1 > len(line) or any(a.end_column > b.column for a, b in zip(edits, edits[1:], strict=False)):
        return []
    pieces, at = [], start
    for edit in edits:
        pieces += [line[at - 1:edit.column - 1], edit.content]
        at = edit.end_column
    return [{"range": _range(lines, text, f.line, start, f.line, end), "text": "".join(pieces)}]


def _diagnostic(f: Finding, lines: _Lines, places: NotebookPlaces) -> dict:
    message = f.message + (f" Fix: {f.suggestion}" if f.suggestion else "")
    if f.cell is None:
        text = lines.of(f.path)
        where = _range(lines, text, f.line, f.column, max(f.end_line, f.line), max(f.end_column, 1))
    else:
        text = None
        message = f"cell {f.cell}, line {f.line}: {message}"
        place = places.region(f)
        notebook = lines.of(f.path)
        where = {"start": {"line": 1}} if place is None else _range(
            lines, notebook, place.line, place.column, place.end_line, place.end_column)
    diagnostic = {"message": message, "location": {"path": f.path, "range": where},
                  "severity": SEVERITIES.get(f.severity, "WARNING"), "code": {"value": f.rule, "url": HELP_URI},
                  "original_output": f.snippet}
    suggestions = _suggestions(f, lines, text)
    if suggestions:
        diagnostic["suggestions"] = suggestions
    return diagnostic


def document(report: Report) -> dict:
    lines = _Lines(report)
    places = NotebookPlaces(report)
    diagnostics = [_diagnostic(f, lines, places) for f in sorted(report.findings, key=Finding.sort_key)]
    diagnostics += [{"message": f"could not be audited ({e.kind}): {e.message}",
                     "location": {"path": e.path, "range": {"start": {"line": 1}}}, "severity": "ERROR",
                     "code": {"value": f"{TOOL_NAME}/{e.kind}"}} for e in report.errors]
    return {"source": {"name": TOOL_NAME, "url": INFORMATION_URI}, "diagnostics": diagnostics}


def render(report: Report, out: TextIO) -> None:
    out.write(json.dumps(document(report), indent=2, ensure_ascii=False) + "\n")
