"""Proof on real code that the prefilter never drops a file with a finding.

    python bench/check_prefilter.py DIR [DIR ...] [--jobs N]

Scans each DIR twice without the cache: as usual, and with every Python file parsed and every
YAML/JSON/TOML file read (prefilter and byte gates off; a pool started from a fresh forkserver does
not see that, so use --jobs 1 on big sets). The findings must be identical; any finding only the second run has is printed and the
exit code is 1. Slow on big sets (it parses every file): minutes for transformers."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.config.settings import Settings  # noqa: E402
from auditor.discover.kinds import BY_NAME as KINDS_BY_NAME  # noqa: E402
from auditor.pipeline import runtime  # noqa: E402
from auditor.pipeline.scan import scan  # noqa: E402
from auditor.read import source  # noqa: E402


def findings(path: str, jobs: int, prefilter: bool) -> tuple[set[tuple], int, float]:
    # The scan asks may_hold_findings (the Python prefilter, and each kind's byte gate) both when it
    # picks the files to check (auditor.read.source) and when the runtime checks one: turning it off
    # turns both off.
    original = source.may_hold_findings
    if not prefilter:
        runtime.may_hold_findings = source.may_hold_findings = (
            lambda file, data, may_match: file.kind in KINDS_BY_NAME)
    try:
        start = time.perf_counter()
        result = scan([path], Settings(jobs=jobs, cache=False))
        elapsed = time.perf_counter() - start
    finally:
        runtime.may_hold_findings = source.may_hold_findings = original
    return {(f.path, f.line, f.column, f.rule) for f in result.findings}, result.files_parsed, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    failed = False
    for directory in args.dirs:
        with_filter, parsed_on, t_on = findings(directory, args.jobs, True)
        without, parsed_off, t_off = findings(directory, args.jobs, False)
        lost = sorted(without - with_filter)
        print(f"{directory}: {len(without)} findings; prefilter on: {parsed_on} parsed in {t_on:.1f} s, "
              f"off: {parsed_off} parsed in {t_off:.1f} s; lost by the prefilter: {len(lost)}")
        for item in lost[:50]:
            print("  LOST", *item)
        failed |= bool(lost) or bool(with_filter - without)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
