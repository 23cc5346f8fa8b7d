"""Stage 7: reports. One module per format behind one registry, every one rendering the same
`Report` (auditor.report.model).

    render("sarif", report, stream)

A reporter module has `render(report: Report, out: TextIO) -> None`. Machine formats write plain
text (never through rich, which wraps lines off a terminal). Importing this package stays cheap:
each reporter is imported when it is used. `rules_view.py` renders the rule docs (`audit rules`,
`audit explain`, SARIF's rule help)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from auditor.model import Finding
    from auditor.report.model import Report

# format name -> module under auditor.report (the CLI's --format choices come from here)
REPORTERS: dict[str, str] = {
    "text": "text",
    "concise": "concise",
    "json": "json_report",
    "json-lines": "json_lines",
    "sarif": "sarif",
    "github": "github",
    "gitlab": "gitlab",
    "junit": "junit",
    "markdown": "markdown",
    "html": "html_report",
    "rdjson": "rdjson",
}


def render(name: str, report: Report, out: TextIO) -> None:
    module = importlib.import_module(f"auditor.report.{REPORTERS[name]}")
    module.render(report, out)


def location(finding: Finding) -> str:
    """`path:line:col`, or ruff's `path:cell N:line:col` for a notebook cell."""
    if finding.cell is not None:
        return f"{finding.path}:cell {finding.cell}:{finding.line}:{finding.column}"
    return f"{finding.path}:{finding.line}:{finding.column}"
