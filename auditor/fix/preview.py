"""What `audit --fix` would leave, without writing anything: a dry fix run, whose re-check of each
file it changes replaces the scan's findings of that file. The plan reads it, so that its counts and
its score after `--fix` include the rewrites only a fix run can make: those to the project's device
owner (auditor/fix/device_owner.py), which a plain scan never looks for, and the swaps the CUDA-clean
gate lets through once those rewrites have run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from auditor.fix.applicability import fixable
from auditor.fix.apply import fix_paths

if TYPE_CHECKING:
    from auditor.model import Finding
    from auditor.report.model import ScanResult


@dataclass(frozen=True)
class FixPreview:
    """The findings after a dry `audit --fix` (safe fixes, or with `unsafe` the unsafe ones too)."""

    left: dict[str, list[Finding]] = field(default_factory=dict)  # per changed file: what remains in it
    fixed: Counter = field(default_factory=Counter)  # (path, rule) -> findings rewritten

    def remaining(self, findings: list[Finding]) -> list[Finding]:
        """`findings` (a scan's, or a part of them) as the fix run would leave them."""
        paths = {f.path for f in findings}
        kept = [f for f in findings if f.path not in self.left]
        return kept + [f for path, left in self.left.items() if path in paths for f in left]

    def fixed_among(self, findings: list[Finding]) -> int:
        """How many of `findings` the fix run rewrites."""
        wanted = Counter((f.path, f.rule) for f in findings)
        return sum(min(count, self.fixed[key]) for key, count in wanted.items())


def preview_fixes(result: ScanResult, unsafe: bool = False) -> FixPreview:
    """A dry fix run over `result` (nothing is written, no module is created)."""
    run = fix_paths(result, unsafe, write=False, max_bytes=result.settings.max_bytes)
    before: dict[str, list[Finding]] = {}
    for finding in result.findings:
        before.setdefault(finding.path, []).append(finding)
    left: dict[str, list[Finding]] = {}
    fixed: Counter = Counter()
    for item in run.changed:
        found = before.get(item.path, [])
        if item.remaining is not None:  # a Python file: checked again after its last round
            after = item.remaining
        else:  # a text file: its applied fixes taken away
            after = [f for f in found if not fixable(f, unsafe)]
        left[item.path] = after
        gone = Counter(f.rule for f in found) - Counter(f.rule for f in after)
        fixed.update({(item.path, rule): count for rule, count in gone.items()})
    return FixPreview(left, fixed)
