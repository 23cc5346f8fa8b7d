"""`--format markdown`: a pull-request comment, or the job summary (`>> $GITHUB_STEP_SUMMARY`):
the gate's outcome, then per target its verdict, score (with the change against the baseline),
what blocks it first and what costs the most (auditor.report.answer; only the --target targets
when it names some), the components when the run judged them, and the findings the run reports
(the first 100). Kept well under GitHub's 1 MiB summary limit."""

from __future__ import annotations

import re
from typing import TextIO

from auditor import TOOL_NAME
from auditor.console import printable
from auditor.report import answer, location
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


def _components(report: Report) -> list[str]:
    """The components and their verdict per target, when the run judged them."""
    parts = answer.components(report)
    if not parts:
        return []
    shown = report.shown_targets
    out = ["### Components", "", "| component | kind | " + " | ".join(shown) + " |",
           "|---|---|" + "---|" * len(shown)]
    for part in parts:
        out.append(f"| {_cell(part.name)} | {_cell(part.kind)} | "
                   + " | ".join(_cell(part.verdicts.get(t, "")) for t in shown) + " |")
    return [*out, ""]


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
    if report.focus is not None and report.hidden_by_target:
        out += [f"Narrowed to {', '.join(report.focus)} (`--target`): {report.hidden_by_target} findings that matter "
                f"only on other targets are not listed.", ""]
    header = "| target | verdict | score | grade |" + (" vs baseline |" if before else "") \
        + " what blocks it first | costs the most |"
    out += [header, "|" + "---|" * (header.count("|") - 1)]
    rows = {item.target: item for item in answer.answers(report)}
    values, grades = scores.score_map(), scores.grade_map()
    for target in (*report.shown_targets, *(("overall",) if report.focus is None else ())):
        value = values[target]
        item = rows.get(target)
        row = (f"| {target} | {_cell(item.verdict) if item else ''} | {'withheld' if value is None else f'{value:.1f}'} "
               f"| {grades[target] or '-'} |")
        if before:
            row += f" {_delta(value, before.get(target))} |"
        row += f" {_cell(answer.blocker_text(item)) if item else ''} |"
        costs = [] if target == "overall" else scores.costs[target][:3]
        row += " " + ", ".join(f"{c.rule} {c.name} ×{c.count} (−{c.points:g})" for c in costs) + " |"
        out.append(row)
    out.append("")
    out += _components(report)
    if report.findings and not report.summary_only:
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
