"""`--format markdown`: a pull-request comment, or the job summary (`>> $GITHUB_STEP_SUMMARY`):
the gate's outcome, verdicts and scores per target (with the change against the baseline), what
costs the most, and the findings the run reports (the first 100). Kept well under GitHub's
1 MiB summary limit."""

from __future__ import annotations

import re
from typing import TextIO

from auditor import TOOL_NAME, targets
from auditor.console import printable
from auditor.report import location
from auditor.report.model import Report

MAX_FINDINGS = 100


def _cell(text: object) -> str:
    """Text safe inside a table cell: no pipe, no line end or other control (a CR started a new
    block: issue 20, D15), no HTML."""
    flat = str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return printable(flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;"))


def _code(text: str) -> str:
    """A code span that holds `text` whatever it holds: its fence is longer than any run of
    backticks inside (two backticks in a path closed a two-backtick fence, and what followed
    was raw HTML: D15), no control, and a pipe escaped (GFM splits a table cell at one even in a
    code span)."""
    text = printable(text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if len(fence) > 1 else f"`{text}`"


def _delta(now: float | None, before: float | None) -> str:
    if before is None or now is None:
        return ""
    change = round(now - before, 1)
    return "±0.0" if change == 0 else f"{change:+.1f}"


def _verdict(report: Report, target: str) -> str:
    verdicts = report.verdicts
    if not verdicts:
        return ""
    value = verdicts.get(target) if isinstance(verdicts, dict) else getattr(verdicts, target, None)
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("verdict") or value.get("summary") or ""
    return _cell(getattr(value, "verdict", value))


def lines(report: Report) -> list[str]:
    scores = report.scores
    before = report.baseline.scores if report.baseline is not None else {}
    status = "passed" if report.gate.passed else "failed"
    out = [f"## {TOOL_NAME}: NVIDIA lock-in", ""]
    if report.gate.checks:
        out.append(f"**Gate {status}**" + ("" if report.gate.passed else ": " + "; ".join(map(_cell, report.gate.reasons))))
        out.append("")
    facts = [f"{len(report.result.files)} files audited", f"{len(report.findings)} findings reported"]
    if report.baseline is not None:
        facts.append(f"{len(report.baseline.known)} known from the baseline, {report.baseline.stale} baseline "
                     f"entries no longer match")
    if report.changed is not None:
        facts.append(f"{report.hidden_by_diff} off the lines changed since `{_cell(report.changed.base)}`")
    if report.errors:
        facts.append(f"{len(report.errors)} files could not be audited")
    out += [", ".join(facts) + ".", ""]
    if scores.withheld is not None:
        out += [f"**Scores withheld**: {_cell(scores.withheld)}.", ""]
    with_verdicts = bool(report.verdicts)
    header = "| target | score | grade |" + (" vs baseline |" if before else "") + (" verdict |" if with_verdicts else "") \
        + " costs the most |"
    out += [header, "|" + "---|" * (header.count("|") - 1)]
    values, grades = scores.score_map(), scores.grade_map()
    for target in (*targets.names(), "overall"):
        value = values[target]
        row = f"| {target} | {'withheld' if value is None else f'{value:.1f}'} | {grades[target] or '-'} |"
        if before:
            row += f" {_delta(value, before.get(target))} |"
        if with_verdicts:
            row += f" {_verdict(report, target)} |"
        costs = [] if target == "overall" else scores.costs[target][:3]
        row += " " + ", ".join(f"{c.rule} {c.name} ×{c.count} (−{c.points:g})" for c in costs) + " |"
        out.append(row)
    out.append("")
    if report.findings:
        shown = report.findings[:MAX_FINDINGS]
        out += [f"### Findings ({len(report.findings)})", "", "| where | rule | severity | message |",
                "|---|---|---|---|"]
        for f in shown:
            out.append(f"| {_code(location(f))} | {f.rule} {_cell(f.name)} | {f.severity} | {_cell(f.message)} |")
        if len(report.findings) > len(shown):
            out.append(f"| … | {len(report.findings) - len(shown)} more | | |")
        out.append("")
    if report.errors:
        out += ["### Not audited", ""]
        out += [f"- {_code(e.path)} ({e.kind}): {_cell(e.message)}" for e in report.errors[:MAX_FINDINGS]]
        out.append("")
    return out


def render(report: Report, out: TextIO) -> None:
    out.write("\n".join(lines(report)) + "\n")
