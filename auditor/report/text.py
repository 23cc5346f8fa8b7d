"""The human report, the answer first: each target's verdict, score and first blocker (and the
components'); then the findings grouped by file with the code line, the message and the rewrite;
a summary by category and severity; the scores and what costs the most."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import TYPE_CHECKING, TextIO

from rich.console import COLOR_SYSTEMS, Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from auditor.console import printable
from auditor.fix.applicability import fix_counts, owner_rewrite_candidates
from auditor.model import CATEGORIES, SEVERITIES
from auditor.report import answer
from auditor.report.component_lines import component_lines
from auditor.report.model import ScanResult

if TYPE_CHECKING:
    from auditor.report.model import Report

SEVERITY_STYLE = {"blocker": "bold red", "major": "red", "minor": "yellow", "info": "cyan"}
GRADE_STYLE = {"A": "bold green", "B": "green", "C": "yellow", "D": "red", "F": "bold red"}
VERDICT_STYLE = {"runs": "green", "runs-degraded": "yellow", "fails": "bold red", "unknown": "bold magenta"}


def make_console(stream: TextIO | None = None, color: str = "auto") -> Console:
    """Colour follows the terminal, NO_COLOR and FORCE_COLOR (rich reads both) unless forced:
    "always" wins over NO_COLOR and TERM=dumb, "never" over FORCE_COLOR."""
    kwargs: dict = {"file": stream, "highlight": False, "soft_wrap": True}
    if color == "always":
        kwargs.update(force_terminal=True, no_color=False)
        console = Console(**kwargs)
        if console.color_system is None:  # TERM=dumb; the user asked for colour anyway
            console = Console(**kwargs, color_system="standard")
        return console
    if color == "never":
        kwargs.update(no_color=True, force_terminal=False)
    return Console(**kwargs)


def _raise_broken_pipe() -> None:
    # rich's default turns a closed pipe into SystemExit(1), which would read as a failed gate.
    raise BrokenPipeError


def render(report: Report, out: TextIO) -> None:
    """The text report of a run, the answer first: each target's verdict, score and first blocker
    (and the components'), then what the run reports, the summary, what the baseline, the changed
    lines or --target left out, and the scores with what costs the most. A pre-commit batch and
    `--quiet` print the findings only; `--summary-only` everything but the findings."""
    console = make_console(out, "never" if report.to_file and report.color != "always" else report.color)
    console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
    shown = SimpleNamespace(findings=report.findings, errors=report.errors, files=report.result.files,
                            files_parsed=report.result.files_parsed)
    findings_only = report.hook or report.quiet
    if not findings_only:
        _answer(report, console)
    if not report.summary_only or findings_only:
        _findings(shown, console, report.unsafe_fixes)
        _errors(shown, console)
        if report.settings.show_suppressed and report.suppressed:
            _suppressed(report, console)
    if findings_only:
        return
    _summary(shown, console)
    for line in _filters(report):
        console.print(Text(line, style="dim"))
    _fixes(SimpleNamespace(findings=report.findings, floor=report.result.floor, rules=report.result.rules,
                           settings=report.result.settings), console, report.unsafe_fixes)
    _scores(report, console)


def _answer(report: Report, console: Console) -> None:
    """The first lines: would the code run on each target as it is, its score, what blocks it
    first; then the components, when the run judged them."""
    found = answer.answers(report)
    console.print(Text("Does it run there as it is? Verdict, score (100 = nothing ties the code to NVIDIA) and "
                       "what blocks it first:", style="bold"))
    width = max((len(a.target) for a in found), default=0)
    verdict_width = max((len(a.verdict) for a in found), default=0)
    for item in found:
        console.print(Text.assemble(
            f"  {item.target:<{width}}  ", (f"{item.verdict:<{verdict_width}}", VERDICT_STYLE.get(item.verdict, "")),
            f"  {answer.score_text(item):>8}", (f"  {_clean(answer.blocker_text(item))}" if item.first else "", "")))
    overall = answer.overall_text(report)
    if overall is not None:
        console.print(Text(f"  {overall}", style="dim"))
    lines = component_lines(report)
    if lines:
        console.print(Text("Components (the headline judges what the repository ships):", style="bold"))
        for line in lines:
            console.print(Text(_clean(f"  {line}")))

def _suppressed(report: Report, console: Console) -> None:
    console.print()
    console.print(Text(f"{len(report.suppressed)} suppressed finding(s):", style="bold"))
    for f, how in report.suppressed:
        console.print(Text.assemble(("  ", ""), f"{f.path}:{f.line}:{f.column} ", (f.rule, "bold"),
                                    f" {_clean(f.message)} ", (f"[{how}]", "dim")))


def _filters(report: Report) -> list[str]:
    lines = []
    if report.baseline is not None:
        b = report.baseline
        lines.append(f"baseline {b.path}: {len(b.new)} new, {len(b.known)} known (not listed), "
                     f"{b.stale} baseline entr{'ies' if b.stale != 1 else 'y'} no longer match")
        if b.moved:
            lines.append("moved since the baseline (its findings stay known): "
                         + ", ".join(_clean(f"{was} -> {now}") for was, now in b.moved))
    if report.changed is not None:
        lines.append(f"--diff-base {report.changed.base}: {report.hidden_by_diff} finding(s) off the changed lines "
                     f"not listed")
    if report.focus is not None and report.hidden_by_target:
        lines.append(f"--target {','.join(report.focus)}: {report.hidden_by_target} finding(s) that matter only on "
                     f"other targets not listed")
    suppressed = len(report.result.suppressed)
    if suppressed and not report.settings.show_suppressed:
        lines.append(f"{suppressed} finding(s) suppressed by comments or per-file-ignores (--show-suppressed lists them)")
    return lines


def _findings(result: ScanResult, console: Console, unsafe_fixes: bool = False) -> None:
    """Three lines per finding, formatted here and written in one go: rich's per-print layout
    costs ~0.5 ms a line, i.e. seconds for a large tree's 50,000 lines. The parts findings share
    (rule and severity, name and message, the fix line) are formatted once each. A finding whose
    fix this run's flags would apply is marked `[*]`; a fix held back says why."""
    paint = _Painter(console)
    fixable = ("safe", "unsafe") if unsafe_fixes else ("safe",)
    shared: dict[tuple, str] = {}
    out: list[str] = []
    current = None
    for f in result.findings:
        if f.path != current:
            current = f.path
            out.append("")
            out.append(paint(_clean(f.path), "bold underline"))
        mark = f.fix is not None and f.fix.applicability in fixable
        key = (f.rule, f.severity, f.name, f.message, mark)
        head = shared.get(key)
        if head is None:
            head = shared[key] = (paint(f.rule, "bold") + " " + paint(f"[{f.severity}]", SEVERITY_STYLE.get(f.severity, ""))
                                  + (" " + paint("[*]", "bold green") if mark else "") + _clean(f" {f.name}: {f.message}"))
        where = f"cell {f.cell}:{f.line}:{f.column}" if f.cell is not None else f"{f.line}:{f.column}"
        out.append(paint(f"  {where} ", "dim") + head)
        if f.snippet:
            out.append(paint(_clean(f"      {f.snippet}"), "dim"))
        if f.suggestion:
            key = (f.suggestion, f.min_torch)
            fix = shared.get(key)
            if fix is None:
                since = paint(f" (torch >= {f.min_torch})", "dim") if f.min_torch else ""
                fix = shared[key] = paint("      fix: ", "green") + _clean(f.suggestion) + since
            out.append(fix)
        if f.fix is not None and f.fix.applicability == "display":
            key = ("display", f.fix.reason or f.fix.message)
            line = shared.get(key)
            if line is None:
                label, text = ("not fixed: ", f.fix.reason) if f.fix.reason else ("rewrite (shown only): ", f.fix.message)
                line = shared[key] = paint("      " + label, "yellow") + _clean(text)
            out.append(line)
    if out:
        console.file.write("\n".join(out) + "\n")


def _clean(text: str) -> str:
    return printable(text)


class _Painter:
    """Wraps text in the ANSI codes rich would emit for a style on this console (none without colour)."""

    def __init__(self, console: Console) -> None:
        self.system = COLOR_SYSTEMS[console.color_system] if console.color_system else None
        self.no_color = console.no_color  # NO_COLOR keeps bold and dim, as rich does
        self.codes: dict[str, tuple[str, str]] = {}

    def __call__(self, text: str, style: str) -> str:
        if self.system is None or not style:
            return text
        codes = self.codes.get(style)
        if codes is None:
            parsed = Style.parse(style).without_color if self.no_color else Style.parse(style)
            prefix, _, suffix = parsed.render("\0", color_system=self.system).partition("\0")
            codes = self.codes[style] = (prefix, suffix)
        return codes[0] + text + codes[1]


def _errors(result: ScanResult, console: Console) -> None:
    if not result.errors:
        return
    console.print()
    console.print(Text(f"{len(result.errors)} file(s) could not be checked:", style="bold yellow"))
    for e in result.errors:
        console.print(Text.assemble(("  error ", "yellow"), f"{_clean(e.path)}: ", (f"[{_clean(e.kind)}] ", "dim"),
                                    _clean(e.message)))


def _summary(result: ScanResult, console: Console) -> None:
    console.print()
    table = Table(title="Findings by category and severity", show_footer=True, title_justify="left")
    table.add_column("category", footer="total")
    counts = Counter((f.category, f.severity) for f in result.findings)
    for severity in SEVERITIES:
        total = sum(v for (c, s), v in counts.items() if s == severity)
        table.add_column(severity, justify="right", footer=str(total), style=SEVERITY_STYLE[severity])
    table.add_column("all", justify="right", footer=str(len(result.findings)))
    for category in CATEGORIES:
        row = [counts.get((category, s), 0) for s in SEVERITIES]
        table.add_row(category, *map(str, row), str(sum(row)))
    console.print(table)
    console.print(Text(
        f"{len(result.files)} files read, {result.files_parsed} parsed, "
        f"{len({f.path for f in result.findings})} with findings, {len(result.errors)} errors", style="dim"))


def _fixes(result: ScanResult, console: Console, unsafe_fixes: bool) -> None:
    """What `audit --fix` would do: `[*]` counts, what --unsafe-fixes adds, what stays a suggestion."""
    counts = fix_counts(result.findings)
    owned = len(owner_rewrite_candidates(result))
    if not counts and not owned:
        return
    fixable = counts["safe"] + (counts["unsafe"] if unsafe_fixes else 0)
    command = "audit --fix --unsafe-fixes" if unsafe_fixes else "audit --fix"
    parts = [f"[*] {fixable} fixable with `{command}`"]
    if not unsafe_fixes and counts["unsafe"]:
        parts.append(f"{counts['unsafe']} more with `--unsafe-fixes`")
    if counts["held"]:
        floor = result.floor.describe() if result.floor is not None else ""
        parts.append(f"{counts['held']} held back (\"not fixed:\" lines; torch floor: {floor})")
    if owned:
        parts.append(f"`audit --fix` may rewrite up to {owned} of the device ties to one device choice it finds or "
                     "creates, which a plain scan does not look for (`audit --diff` shows them)")
    console.print()
    console.print(Text("; ".join(parts) + ".", style="green"))


def _scores(report: Report, console: Console) -> None:
    scores, found = report.scores, report.verdicts
    console.print()
    table = Table(title="Portability score (100 = nothing ties the code to NVIDIA) and verdict (does it run there "
                  "as it is?)", title_justify="left")
    table.add_column("target")
    table.add_column("score", justify="right")
    table.add_column("grade", justify="center")
    table.add_column("verdict")
    table.add_column("costs the most")
    values, letters = scores.score_map(), scores.grade_map()
    shown = report.shown_targets
    for target in (*shown, *(("overall",) if report.focus is None else ())):
        value, letter = values[target], letters[target] or "-"
        top = "" if target == "overall" else ", ".join(
            f"{c.rule} {c.name} x{c.count} in {c.files} file{'s' if c.files > 1 else ''} (-{c.points:g})"
            for c in scores.costs[target][:3])
        verdict = found[target].verdict if target in found else ""
        table.add_row(target, "withheld" if value is None else f"{value:.1f}",
                      Text(letter, style=GRADE_STYLE.get(letter, "")), Text(verdict, style=VERDICT_STYLE.get(verdict, "")),
                      top)
    console.print(table)
    if scores.withheld is not None:
        console.print(Text(_clean(f"Scores withheld: {scores.withheld}."), style="bold magenta"))
    lines = []
    for target in shown:
        verdict = found[target]
        if not verdict.reasons:
            continue
        lines.append(Text.assemble((f"  {target}: ", "bold"), (verdict.verdict, VERDICT_STYLE[verdict.verdict])))
        for reason in verdict.reasons[:3]:
            lines.append(Text(_clean(f"    {answer.reason_text(reason)}")))
    if lines:
        console.print(Text("Why (the first findings behind each verdict):", style="bold"))
        for line in lines:
            console.print(line)
