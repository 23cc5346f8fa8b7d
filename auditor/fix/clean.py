"""What a fix run did to the CUDA-clean gate, per file (issue 19, item 3): which files it made
CUDA-clean (and with which fixes), and what still keeps the others from being so (the first
blockers). "CUDA-clean": no finding left that raises where the accelerator swaps would send the
program (auditor/fix/policy.py `raising_ties`), whatever fixes it still carries.

Before: the scan's findings of the file and its text as read. After: the findings of the fix
run's last check of the fixed text (auditor/fix/apply.py), so --diff reports the same as --fix.
Shown on stderr after the fix summary line, and in the JSON report as `fixes` (format 9)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from auditor.fix.policy import raising_ties

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue
    from auditor.fix.apply import FixRun
    from auditor.model import Finding
    from auditor.report.model import ScanResult

FIRST_BLOCKERS = 3  # named per file


@dataclass(frozen=True)
class FileCleanness:
    path: str
    clean_before: bool
    clean_after: bool
    fixed: tuple[tuple[str, int], ...]  # (rule, fixes applied), by rule
    blockers: tuple[Finding, ...]  # the first findings that keep it from being CUDA-clean after the run
    blocker_count: int

    @property
    def made_clean(self) -> bool:
        return self.clean_after and not self.clean_before

    def to_dict(self) -> dict:
        return {"path": self.path, "cuda_clean_before": self.clean_before, "cuda_clean": self.clean_after,
                "fixed": dict(self.fixed), "blockers": [
                    {"rule": f.rule, "name": f.name, "line": f.line, "column": f.column} for f in self.blockers],
                "blocker_count": self.blocker_count}

    def describe(self) -> str:
        """One line: what made it CUDA-clean, or what still keeps it from being so."""
        if self.clean_after:
            fixes = ", ".join(f"{rule} x{count}" for rule, count in self.fixed) or "no fix"
            return f"{self.path}: CUDA-clean now ({fixes})"
        named = ", ".join(f"{f.rule} at {f.line}:{f.column}" for f in self.blockers)
        more = self.blocker_count - len(self.blockers)
        return f"{self.path}: not CUDA-clean: {named}" + (f" and {more} more" if more > 0 else "")


@dataclass
class FixSummary:
    """The JSON report's `fixes`: what --fix (or --diff) did, and each file's CUDA-clean state."""

    mode: str  # fix | diff
    unsafe: bool
    fixed: int
    files_changed: int
    created: list[dict] = field(default_factory=list)  # [{path, written}]
    device_owner: dict | None = None  # {module, function, path, created, kind}
    files: list[FileCleanness] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "unsafe": self.unsafe, "fixed": self.fixed, "files_changed": self.files_changed,
                "created": self.created, "device_owner": self.device_owner,
                "files_made_cuda_clean": sum(1 for f in self.files if f.made_clean),
                "files_not_cuda_clean": sum(1 for f in self.files if not f.clean_after),
                "files": [f.to_dict() for f in self.files]}


def summarize(result: ScanResult, run: FixRun, catalogue: Catalogue, unsafe: bool, write: bool) -> FixSummary:
    """Per file the run checked whose findings raised where the swaps lead, before or after."""
    by_path: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    owner = run.device_owner
    summary = FixSummary("fix" if write else "diff", unsafe, run.fixed_count, len(run.changed),
                         [{"path": c.shown, "written": c.written} for c in run.created if c.error is None],
                         None if owner is None else {"module": owner.module, "function": owner.function,
                                                     "path": owner.path, "created": owner.created, "kind": owner.kind})
    for item in run.files:
        if item.remaining is None:
            continue
        before = raising_ties(by_path.get(item.path, []), catalogue, item.original)
        after = raising_ties(item.remaining, catalogue, item.fixed) if item.changed else before
        if not before and not after:
            continue
        applied: Counter = Counter()
        for (rule, _), count in item.applied.items():
            applied[rule] += count
        summary.files.append(FileCleanness(item.path, not before, not after, tuple(sorted(applied.items())),
                                           tuple(after[:FIRST_BLOCKERS]), len(after)))
    return summary


def summary_lines(summary: FixSummary, limit: int = 20) -> list[str]:
    """The lines `audit --fix` prints: files made CUDA-clean first, then the ones it changed that are
    still not; at most `limit` of each, then how many more."""
    lines = []
    made = [f for f in summary.files if f.made_clean]
    held = [f for f in summary.files if not f.clean_after and f.fixed]
    for group in (made, held):
        lines.extend(f.describe() for f in group[:limit])
        if len(group) > limit:
            lines.append(f"... and {len(group) - limit} more files")
    untouched = sum(1 for f in summary.files if not f.clean_after and not f.fixed)
    if untouched:
        lines.append(f"{untouched} other file{'s' if untouched != 1 else ''} with ties that raise off CUDA had no "
                     f"applicable fix (see their \"not fixed:\" reasons)")
    return lines
