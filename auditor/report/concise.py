"""`--format concise`: one line per finding, `path:line:col: CODE [*] message` (ruff's concise
form; `[*]` marks a finding `--fix` can rewrite), grep-able and read by editors' problem matchers.
Files that could not be audited get a line of their own; a run over a whole tree ends with one
summary line and one line per target (its verdict, score and first blocker: auditor.report.answer),
the answer a CI log ends on. A pre-commit batch and `--quiet` print findings only."""

from __future__ import annotations

from typing import TextIO

from auditor.console import printable
from auditor.fix.applicability import fixable
from auditor.report import answer, location
from auditor.report.model import Report


def _clean(text: str) -> str:
    return printable(text)


def lines(report: Report) -> list[str]:
    out = []
    for f in report.findings:
        marker = "[*] " if fixable(f, report.unsafe_fixes) else ""
        out.append(_clean(f"{location(f)}: {f.rule} {marker}{f.message}"))
    for e in report.errors:
        out.append(_clean(f"{e.path}:1:1: error[{e.kind}] {e.message}"))
    if report.settings.show_suppressed:
        for f, how in report.suppressed:
            out.append(_clean(f"{location(f)}: {f.rule} {f.message} (suppressed: {how})"))
    return out


def summary(report: Report) -> str:
    findings = len(report.findings)
    fix = sum(1 for f in report.findings if fixable(f, report.unsafe_fixes))
    flags = "--fix --unsafe-fixes" if report.unsafe_fixes else "--fix"
    parts = [f"Found {findings} finding{'s' if findings != 1 else ''}"
             + (f" ({fix} fixable with {flags})" if fix else "")
             + f" in {len(report.result.files)} file{'s' if len(report.result.files) != 1 else ''}"]
    if report.baseline is not None:
        parts.append(f"{len(report.baseline.known)} known from the baseline, {report.baseline.stale} baseline "
                     f"entr{'ies' if report.baseline.stale != 1 else 'y'} no longer match")
    if report.changed is not None:
        parts.append(f"{report.hidden_by_diff} off the lines changed since {report.changed.base}")
    if report.focus is not None and report.hidden_by_target:
        parts.append(f"{report.hidden_by_target} matter only on targets other than {', '.join(report.focus)}")
    if report.scores.withheld is not None:
        parts.append(f"scores withheld: {report.scores.withheld}")
    elif report.focus is None:
        grade = report.scores.grades["overall"]
        parts.append(f"overall score {report.scores.overall:.1f} ({grade})")
    return "; ".join(parts) + "."


def target_lines(report: Report) -> list[str]:
    """`tpu: fails, score 24.2 (F); blocked by ...`: one line per target the report shows."""
    return [_clean(answer.one_line(item)) for item in answer.answers(report)]


def render(report: Report, out: TextIO) -> None:
    body = [] if report.summary_only and not (report.hook or report.quiet) else lines(report)
    if not (report.hook or report.quiet):
        body.append(summary(report))
        body += target_lines(report)
    if body:
        out.write("\n".join(body) + "\n")
