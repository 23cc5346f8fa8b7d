"""Reports: one module per format behind one registry, every one rendering the same `Report`.

    render("sarif", report, stream)

A reporter module has `render(report: Report, out: TextIO) -> None`. Machine formats write plain
text (never through rich, which wraps lines off a terminal). Importing this package stays cheap:
each reporter is imported when it is used."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from auditor.baseline import Comparison
    from auditor.changed_lines import ChangedLines
    from auditor.config import Settings
    from auditor.engine import ScanResult
    from auditor.gate import GateOutcome
    from auditor.model import FileError, Finding
    from auditor.score import Scores
    from auditor.verdict import Verdict

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
}


@dataclass
class Report:
    """One run, as every reporter sees it.

    `findings` and `errors` are what the run reports: after suppressions, and with a baseline or
    --diff-base only what is new or on changed lines. `scores` always count every finding that is
    not suppressed (a baseline hides old lock-in from the gate, not from the score)."""

    result: ScanResult
    scores: Scores
    findings: list[Finding]
    errors: list[FileError]
    gate: GateOutcome
    settings: Settings
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # listed with --show-suppressed
    baseline: Comparison | None = None
    changed: ChangedLines | None = None
    hidden_by_diff: int = 0  # findings off the changed lines
    hook: bool = False  # a pre-commit run on files: findings only, no whole-repository numbers
    quiet: bool = False
    color: str = "auto"
    to_file: bool = False
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes count as fixable (`[*]`) too

    @property
    def root(self) -> str:
        return self.result.root

    @cached_property
    def verdicts(self) -> dict[str, Verdict]:
        """Per-target verdicts (runs, runs-degraded, fails), judged like the scores on every
        finding that is not suppressed."""
        from auditor.verdict import verdicts

        return verdicts(self.result.findings, self.result.errors)


def formats() -> list[str]:
    return list(REPORTERS)


def render(name: str, report: Report, out: TextIO) -> None:
    module = importlib.import_module(f"auditor.report.{REPORTERS[name]}")
    module.render(report, out)


def fixable(finding: Finding, unsafe: bool = False) -> bool:
    """Whether `--fix` (with `unsafe`: `--fix --unsafe-fixes`) would apply the finding's fix (the
    `[*]` marker)."""
    if finding.fix is None or not finding.fix.edits:
        return False
    return finding.fix.applicability == "safe" or (unsafe and finding.fix.applicability == "unsafe")


def location(finding: Finding) -> str:
    """`path:line:col`, or ruff's `path:cell N:line:col` for a notebook cell."""
    if finding.cell is not None:
        return f"{finding.path}:cell {finding.cell}:{finding.line}:{finding.column}"
    return f"{finding.path}:{finding.line}:{finding.column}"
