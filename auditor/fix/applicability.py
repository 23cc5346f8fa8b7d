"""Which fixes a run applies: `--fix` the safe ones, `--fix --unsafe-fixes` the unsafe ones too;
display fixes are only shown. Shared by the fixer and the reports (the `[*]` marker, the counts
under the text report), so both always agree."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from auditor.model import Finding


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
