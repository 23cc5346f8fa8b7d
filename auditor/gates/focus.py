"""`--target T`: the run judges and reports what matters on T.

The targets named by `--target` (or the configuration's `targets`) are the scores `--fail-under`
gates; unless `overall` is among them they are also the report's focus: every format shows only
those targets' verdicts and scores, and only the findings that matter there, i.e. that degrade or
raise on one of them (a finding that works on every target, such as an unused suppression, is about
no target and stays). `--fail-on` then judges the findings the report shows. Baselines record and
compare every finding, whatever the focus."""

from __future__ import annotations

from auditor.config.settings import Settings
from auditor.model import Finding

OVERALL = "overall"


def focus_of(settings: Settings) -> tuple[str, ...] | None:
    """The targets the report is narrowed to; None: every target (`overall` is asked for)."""
    chosen = tuple(settings.targets)
    if not chosen or OVERALL in chosen:
        return None
    return chosen


def matters(finding: Finding, focus: tuple[str, ...]) -> bool:
    effects = finding.targets
    if all(effect == "works" for effect in effects.values()):
        return True  # about no target in particular
    return any(effects.get(target, "raises") != "works" for target in focus)


def narrow(findings: list[Finding], focus: tuple[str, ...] | None) -> tuple[list[Finding], int]:
    """The findings that matter on the focus targets, and how many were left out."""
    if focus is None:
        return findings, 0
    kept = [f for f in findings if matters(f, focus)]
    return kept, len(findings) - len(kept)
