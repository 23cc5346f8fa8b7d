"""Start-up cost: importing the CLI, and loading (and checking) the catalogue, against another checkout.

    python bench/startup.py --other /path/to/other/checkout            # 15 interleaved rounds
    python bench/startup.py --other ../main --rounds 30 --json out.json

Each measurement is its own interpreter, run with the checkout's own virtualenv (`.venv/bin/python`,
or --python / --other-python), byte-compiled first, alternating checkouts round by round so both
see the same machine. Measured, as wall time from start to exit:

- `import`: `python -c "import auditor.cli"`, what `audit --version` pays;
- `version`: `python -m auditor --version`;
- `catalogue`: the import, then the rules and the full catalogue as a cold run builds them
  (`auditor.checks.registry.full_catalogue()`, `auditor.registry` in a checkout from before the
  stage packages; in a checkout with auditor/catalogue_check.py it also checks it), then the
  scoring/verdict tables a report reads;
- `warm-tables`: what a warm run (every file from the cache) reads of the catalogue: the scoring and
  verdicts tables and, where there is one, the target registry;
- `warm-run`: `audit` on a copy of fixtures/demo-repo outside any git checkout (the same copy for
  both sides: a checkout that is a git worktree would otherwise read .gitignore files the other does
  not), JSON to /dev/null, with every file served from a cache folder the first round filled: a whole
  small run that loads no rule and no catalogue;
- `cold-run`: the same with an empty cache folder each round: a whole small first run (rules,
  catalogue and its check, parsing, the report, writing the cache).

The figure per row is the median over rounds, and the ratio is the median of the per-round ratios
(this checkout / other), which a drifting machine disturbs least. Numbers on a shared machine move
by 2x with the load; the ratios are what to compare."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = {
    "import": "import auditor.cli",
    "version": None,  # python -m auditor --version
    "catalogue": ("import auditor.cli\n"
                  "try:\n    from auditor.checks.registry import full_catalogue\n"
                  "except ImportError:\n    from auditor.registry import full_catalogue\n"
                  "from auditor.catalogue import load_table\n"
                  "full_catalogue(); load_table('scoring'); load_table('verdicts')\n"),
    "warm-run": None,  # python -m auditor fixtures/demo-repo, warm
    "cold-run": None,  # the same, with an empty cache folder
    "warm-tables": ("import auditor.cli\n"
                    "from auditor.catalogue import load_table\n"
                    "load_table('scoring'); load_table('verdicts')\n"
                    "try:\n    from auditor.targets import names\nexcept ImportError:\n    pass\nelse:\n    names()\n"),
}


def interpreter(checkout: Path, given: str | None) -> str:
    if given:
        return given
    candidate = checkout / ".venv" / "bin" / "python"
    if not candidate.exists():
        sys.exit(f"no {candidate}: create the checkout's venv or pass its --python")
    return str(candidate)


def compile_tree(python: str, checkout: Path) -> None:
    subprocess.run([python, "-m", "compileall", "-q", str(checkout / "auditor")], check=True)


def run_once(python: str, checkout: Path, case: str, scratch: Path) -> float:
    code = CASES[case]
    if case == "version":
        command = [python, "-m", "auditor", "--version"]
    elif case in ("warm-run", "cold-run"):
        cache = scratch / checkout.name / "cache"
        if case == "cold-run":
            shutil.rmtree(scratch / checkout.name / "cold", ignore_errors=True)
            cache = scratch / checkout.name / "cold"
        command = [python, "-m", "auditor", str(scratch / "demo-repo"), "--isolated", "--format", "json",
                   "-o", os.devnull, "--cache-dir", str(cache)]
    else:
        command = [python, "-c", code]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)  # the checkout's own sources, whatever the venv has installed
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # the demo repo's findings do not fail a run without a gate
        sys.exit(f"{checkout}: {case} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, type=Path, help="the checkout to compare with (e.g. main)")
    parser.add_argument("--python", help="this checkout's interpreter (default: .venv/bin/python)")
    parser.add_argument("--other-python", help="the other checkout's interpreter (default: its .venv/bin/python)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sides = {"this": (interpreter(REPO, args.python), REPO),
             "other": (interpreter(args.other.resolve(), args.other_python), args.other.resolve())}
    scratch = Path(tempfile.mkdtemp(prefix="lockin-startup-"))
    shutil.copytree(REPO / "fixtures" / "demo-repo", scratch / "demo-repo")  # one input, outside any git checkout
    try:
        for python, checkout in sides.values():
            compile_tree(python, checkout)
            run_once(python, checkout, "warm-run", scratch)  # fills the cache the warm runs read
        times: dict[str, dict[str, list[float]]] = {case: {"this": [], "other": []} for case in CASES}
        for round_number in range(args.rounds):
            order = ("this", "other") if round_number % 2 == 0 else ("other", "this")
            for case in CASES:
                for side in order:
                    python, checkout = sides[side]
                    times[case][side].append(run_once(python, checkout, case, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {}
    print(f"{'case':<12} {'this ms':>9} {'other ms':>9} {'ratio':>7}   ({args.rounds} rounds, medians)")
    for case, runs in times.items():
        ratios = [a / b for a, b in zip(runs["this"], runs["other"], strict=True)]
        row = {"this_ms": statistics.median(runs["this"]) * 1000, "other_ms": statistics.median(runs["other"]) * 1000,
               "ratio": statistics.median(ratios)}
        result[case] = row
        print(f"{case:<12} {row['this_ms']:9.1f} {row['other_ms']:9.1f} {row['ratio']:7.3f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"rounds": args.rounds, "other": str(args.other), "cases": result}, indent=2)
                             + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
