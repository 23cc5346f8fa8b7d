"""`--format github`: GitHub Actions workflow commands, one annotation per finding on the line it
points at (`::error file=...,line=...,col=...::message`).

Severity maps to the annotation level (blocker and major: error, minor: warning, info: notice).
Values are escaped as actions/toolkit does: `%`, CR and LF everywhere, and `:` and `,` in
properties; any other character that is not printable (ESC, BEL, a line separator: issue 20, D28)
is written as an escape (auditor.console.printable). GitHub shows at most 10 errors and 10 warnings per step, so put the full report in
the job summary as well (`--format markdown >> $GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from typing import TextIO

from auditor import TOOL_NAME
from auditor.console import printable
from auditor.report.model import Report

LEVELS = {"blocker": "error", "major": "error", "minor": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: object) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None)
    return f"::{level} {props}::{escape_data(message)}" if props else f"::{level}::{escape_data(message)}"


def render(report: Report, out: TextIO) -> None:
    lines = []
    for f in report.findings:
        text = f"{f.rule} {f.message}"
        if f.suggestion:
            text += f"\nFix: {f.suggestion}"
        if f.cell is not None:  # a notebook: the file's lines are JSON, so point at the file with the cell named
            lines.append(command(LEVELS.get(f.severity, "warning"), f"cell {f.cell}, line {f.line}: {text}",
                                 title=f"{TOOL_NAME} {f.rule} ({f.name})", file=f.path, line=1))
            continue
        lines.append(command(LEVELS.get(f.severity, "warning"), text, title=f"{TOOL_NAME} {f.rule} ({f.name})",
                             file=f.path, line=f.line, endLine=f.end_line, col=f.column, endColumn=f.end_column))
    for e in report.errors:
        lines.append(command("error", f"could not be audited ({e.kind}): {e.message}",
                             title=f"{TOOL_NAME} {e.kind} error", file=e.path, line=1))
    if not report.gate.passed:
        for reason in report.gate.reasons:
            lines.append(command("error", reason, title=f"{TOOL_NAME} gate"))
    if lines:
        out.write("\n".join(lines) + "\n")
