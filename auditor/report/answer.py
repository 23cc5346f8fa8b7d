"""The answer first: per target, would the code run there as it is (its verdict), its score and
grade, and what blocks it first; the same per component when the report has components. The text
report leads with these lines, the concise report ends on them and the markdown report's table
carries them; `--target` narrows them, like the findings, to the targets it names.

    for answer in answers(report):
        print(one_line(answer))   # tpu: fails, score 24.2 (F); blocked by `.cuda()` calls (train.py:3, LK102)

Components come from the report (`Report.components`: auditor/analysis/components.py splits the
repository, each part judged on its own findings); a pre-commit batch or a repository of one part
shows none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from auditor import targets
from auditor.portability.verdict import DEGRADED, FAILS, UNKNOWN, Reason

if TYPE_CHECKING:
    from auditor.report.model import Report

# What the first reason of a verdict is to the reader, by verdict.
LEADS = {FAILS: "blocked by", DEGRADED: "degraded by", UNKNOWN: "unknown:"}


@dataclass(frozen=True)
class TargetAnswer:
    target: str
    verdict: str  # runs, runs-degraded, fails, unknown
    score: float | None  # None: withheld (files failed with an internal error)
    grade: str | None
    first: Reason | None  # what blocks (or degrades) it first
    more: int = 0  # further reasons the verdict gives


@dataclass(frozen=True)
class ComponentAnswer:
    name: str
    kind: str
    paths: tuple[str, ...]
    verdicts: dict[str, str]  # target -> verdict word ("" when the component has none for it)
    scores: dict[str, float]


def answers(report: Report) -> list[TargetAnswer]:
    """One answer per target the report shows (every target, or those --target names), in
    registry order."""
    values, grades = report.scores.score_map(), report.scores.grade_map()
    out = []
    for target in report.shown_targets:
        verdict = report.verdicts[target]
        reasons = verdict.reasons
        out.append(TargetAnswer(target, verdict.verdict, values.get(target), grades.get(target),
                                reasons[0] if reasons else None, max(len(reasons) - 1, 0)))
    return out


def reason_text(reason: Reason) -> str:
    """`why (path:line, RULE)`, or `why (path)` for a file that could not be checked."""
    where = f"{reason.path}:{reason.line}, {reason.rule}" if reason.rule is not None else reason.path
    return f"{reason.why} ({where})"


def score_text(answer: TargetAnswer) -> str:
    return "withheld" if answer.score is None else f"{answer.score:.1f} ({answer.grade})"


def blocker_text(answer: TargetAnswer) -> str:
    """What stands in the way first, with its lead (`blocked by ...`); "" when the code runs there."""
    if answer.first is None:
        return ""
    more = f" (+{answer.more} more reason{'s' if answer.more > 1 else ''})" if answer.more else ""
    return f"{LEADS.get(answer.verdict, '')} {reason_text(answer.first)}{more}".strip()


def one_line(answer: TargetAnswer) -> str:
    """`tpu: fails, score 24.2 (F); blocked by ...`: the concise report's per-target line."""
    blocker = blocker_text(answer)
    return f"{answer.target}: {answer.verdict}, score {score_text(answer)}" + (f"; {blocker}" if blocker else "")


def overall_text(report: Report) -> str | None:
    """The overall score and the set it averages; None when the report is narrowed to targets
    (overall then answers another question than the one asked)."""
    if report.focus is not None:
        return None
    scores = report.scores
    members = scores.overall_set or targets.overall_set()
    value = scores.score_map()["overall"]
    shown = "withheld" if value is None else f"{value:.1f} ({scores.grade_map()['overall']})"
    named = f"{members.name} v{members.version}: " if members.version is not None else ""
    return f"overall: score {shown}, the mean over {named}{', '.join(members.members)}"


def components(report: Report) -> list[ComponentAnswer]:
    """The report's components with a verdict word per shown target; [] for a pre-commit batch or
    a repository of one part (its line would repeat the headline)."""
    if report.hook or len(report.components) < 2:
        return []
    out = []
    for judged in report.components:
        verdicts = {t: judged.verdicts[t].verdict if t in judged.verdicts else "" for t in report.shown_targets}
        scores = {t: v for t, v in judged.scores.score_map().items() if v is not None}
        part = judged.component
        out.append(ComponentAnswer(part.name, part.kind, tuple(part.paths), verdicts, scores))
    return out
