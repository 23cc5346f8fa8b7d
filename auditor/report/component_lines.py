"""One line per component of the repository, for the text and markdown reports: what it is, whether
the headline judges it, and its verdicts grouped by word ("tests: fails on tpu, trainium; runs on
rocm ..."). The reporters call `component_lines` and place the lines where their layout wants them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor import targets

if TYPE_CHECKING:
    from auditor.report.model import ComponentJudgement, Report

_ORDER = ("fails", "unknown", "runs-degraded", "runs")


def component_line(judged: ComponentJudgement, shown: tuple[str, ...] | None = None) -> str:
    """`name (kind, headline|beside, N findings in paths): fails on a, b; runs on c; score S`."""
    shown = targets.names() if shown is None else shown
    component = judged.component
    role = "headline" if component.shipped else "beside"
    paths = ", ".join(component.paths[:3]) + (f" +{len(component.paths) - 3}" if len(component.paths) > 3 else "")
    by_word: dict[str, list[str]] = {}
    for target in shown:
        verdict = judged.verdicts.get(target)
        if verdict is not None:
            by_word.setdefault(verdict.verdict, []).append(target)
    words = "; ".join(f"{word} on {', '.join(by_word[word])}" for word in _ORDER if word in by_word)
    overall = judged.scores.score_map().get("overall")
    score = "score withheld" if overall is None else f"score {overall:.1f}"
    reason = ""
    for target in shown:
        verdict = judged.verdicts.get(target)
        if verdict is not None and verdict.verdict == "fails" and verdict.reasons:
            first = verdict.reasons[0]
            reason = f" (first: {first.why}, {first.path}" + (f":{first.line}" if first.line else "") + ")"
            break
    return (f"{component.name} ({component.kind}, {role}, {judged.findings} finding"
            f"{'s' if judged.findings != 1 else ''} in {paths}): {words}; {score}{reason}")


def component_lines(report: Report) -> list[str]:
    """A line per component, headline ones first; none for a pre-commit batch or a one-part repository."""
    if report.hook or len(report.components) < 2:
        return []
    return [component_line(judged, report.shown_targets) for judged in report.components]
