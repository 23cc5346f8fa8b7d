"""`audit --fix` / `--diff` end to end: fix what the scan found, say what happened on stderr, and
scan again so that the report and the exit code are about what remains."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from auditor.fix.applicability import fixable
from auditor.fix.apply import FixRun, fix_paths
from auditor.fix.clean import FixSummary, summarize, summary_lines
from auditor.pipeline.runtime import catalogue_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from auditor.config.settings import Settings
    from auditor.report.model import ScanResult


@dataclass
class FixOutcome:
    result: ScanResult  # after --fix: the scan of the fixed files; after --diff: the scan as it was
    run: FixRun
    summary: FixSummary | None = None  # per file: made CUDA-clean, or what still keeps it from being so


def run_fixes(result: ScanResult, settings: Settings, unsafe: bool, write: bool, show: bool,
              rescan: Callable[[], ScanResult], err: TextIO | None = None) -> FixOutcome:
    """Fix, report on `err` (stderr) what was (or with --diff would be) fixed, and after writing,
    `rescan` so that the report and the gates see what remains."""
    err = err or sys.stderr
    run = fix_paths(result, unsafe, write, settings.max_bytes)
    for error in run.errors:
        print(f"audit: warning: {error.path}: {error.message}", file=err)
    for new in run.created:
        if new.error is not None:
            print(f"audit: warning: {new.error}", file=err)
        elif run.device_owner is not None:
            verb = "created" if new.written else "would create"
            print(f"audit: {verb} {new.shown}: the one place the device is chosen; set {run.device_owner.env}=... "
                  f"(cpu, cuda, mps, xpu, ...) to override", file=err)
    summary = summarize(result, run, catalogue_for(settings), unsafe, write)
    if write and run.changed:
        result = rescan()
    result.fixes = summary
    for text in summary_lines(summary):  # before the count line, which stays the last word on what was fixed
        print(f"audit: {text}", file=err)
    files = len(run.changed)
    verb = "fixed" if write else "would fix"
    line = f"audit: {verb} {run.fixed_count} finding{'s' if run.fixed_count != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    if not unsafe:
        more = more_with_unsafe(result) if write else 0
        line += f" ({more} more with --unsafe-fixes)" if more else ""
    print(line, file=err)
    if show and run.changed:
        print(f"{'Fixed' if write else 'Would fix'}:", file=err)
        for item in run.changed:
            print(f"- {item.path}:", file=err)
            for (rule, name), count in sorted(item.applied.items()):
                print(f"    {count} × {rule} ({name})", file=err)
    return FixOutcome(result, run, summary)


def more_with_unsafe(result: ScanResult) -> int:
    return sum(1 for f in result.findings if fixable(f, True) and not fixable(f, False))
