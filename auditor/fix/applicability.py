"""Which fixes a run applies: `--fix` the safe ones, `--fix --unsafe-fixes` the unsafe ones too;
display fixes are only shown. Shared by the fixer and the reports (the `[*]` marker, the counts
under the text report), so both always agree."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from auditor.catalogue import load_table

if TYPE_CHECKING:
    from auditor.model import Finding
    from auditor.report.model import ScanResult


def fixable(finding: Finding, unsafe: bool = False) -> bool:
    """Whether `--fix` (with `unsafe`: `--fix --unsafe-fixes`) would apply the finding's fix (the
    `[*]` marker)."""
    if finding.fix is None or not finding.fix.edits:
        return False
    return finding.fix.applicability == "safe" or (unsafe and finding.fix.applicability == "unsafe")


def fix_counts(findings: list) -> Counter:
    """safe / unsafe / held (display with a reason) / shown (display by nature) counts."""
    counts: Counter = Counter()
    for finding in findings:
        fix = finding.fix
        if fix is None or not (fix.edits or fix.reason):
            continue
        if fix.applicability == "display":
            counts["held" if fix.reason else "shown"] += 1
        else:
            counts[fix.applicability] += 1
    return counts


def owner_rewrite_candidates(result: ScanResult) -> list[Finding]:
    """The device ties a plain scan shows without a safe fix that `audit --fix` may rewrite to the
    project's device owner (which only a fix run looks for): an upper bound, since the rewrite
    still holds some (comparisons, `choices=` lists, code that runs at import)."""
    rules = device_rules(result)
    ties = [f for f in result.findings if f.rule in rules and not fixable(f)]
    return rewritable_ties(ties, result) if ties else []


def device_rules(result: ScanResult) -> frozenset[str]:
    """The codes of the run's rules whose fixes rewrite to the project's device owner."""
    return frozenset(rule.code for rule in result.rules if rule.uses_device_owner())


def rewritable_ties(ties: list[Finding], result: ScanResult) -> list[Finding]:
    """The device-rule findings outside the contexts where their rewrites stay suggestions."""
    held = set(load_table("fixes").get("context", {}).get("hold_device", ()))  # built in: no configuration extends it
    if not getattr(result.settings, "fix_tests", False):
        held.add("test")
    return [f for f in ties if not (f.context and not held.isdisjoint(f.context.split("+")))]
