"""`audit --fix --unsafe-fixes` over a copy of the corpus: what it changes, that every changed file
still compiles, that a second run changes nothing, and what it costs next to a plain scan.

    python bench/fix_corpus.py                              # the whole corpus, --torch-version 2.13
    python bench/fix_corpus.py --set transformers           # one package
    python bench/fix_corpus.py --set DIR --torch-version 2.6 --json out.json

The chosen set is copied first (only the files audit reads; see run_bench.copy_set), so the corpus
is never written. Steps, each its own `audit` process (serial, --no-cache, -j as given):
1. a plain cold scan (JSON, no cache): wall time, findings, and their fixes by class (safe, unsafe,
   held back by the torch floor, the CUDA-clean gate or a per-backend file, display-only);
2. `--fix --unsafe-fixes --torch-version V` as a first run (an empty cache folder): wall time (it
   scans, fixes, then scans what remains, which reuses the cache but for the changed files);
3. the copy against the originals: files changed, fixes applied (from audit's own summary), lines
   changed, and `compile()` of every changed Python file whose original compiled;
4. the same fix command again (warm): it must report 0 fixes and leave every file byte for byte as it was.
Also printed (issue 19): fixes applied per finding and per finding of a rule that has a fix; the Python
files with a tie that raises on MPS, XPU or CPU before (the plain scan) and after (what the fix run
reports remaining), per target and in any of them; the files audit created (the device module);
the compile rate of the changed Python files. `--safe` runs `--fix` without `--unsafe-fixes`.
Exit 1 when a changed file does not compile or the second run changes anything."""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import REPO, copy_set, source_of  # noqa: E402


def audit(args: argparse.Namespace, *rest: str, cache: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    caching = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "auditor", *rest, *caching, "-j", str(args.jobs)],
                          env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def compiles(text: str, name: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


RAISE_TARGETS = ("mps", "xpu", "cpu")  # the targets the CUDA-clean gate and the device rewrites are about


def raising_files(report: dict) -> dict[str, int]:
    """Python files with at least one finding that raises there, per target and in any of them."""
    per: dict[str, set[str]] = {target: set() for target in (*RAISE_TARGETS, "any")}
    for finding in report["findings"]:
        if not finding["path"].endswith((".py", ".ipynb")):
            continue
        for target in RAISE_TARGETS:
            if (finding.get("targets") or {}).get(target) == "raises":
                per[target].add(finding["path"])
                per["any"].add(finding["path"])
    return {target: len(paths) for target, paths in per.items()}


def device_rules() -> set[str]:
    """Rules whose fix goes through the project's device owner: only a fix run knows it, so a plain
    scan shows their findings without a fix."""
    sys.path.insert(0, str(REPO))
    from auditor.checks.registry import all_rules

    # getattr: a checkout from before the device owner (measured for "before" figures) has no such rules
    return {rule.code for rule in all_rules() if getattr(rule, "uses_device_owner", lambda: False)()}


def fix_classes(report: dict) -> Counter:
    counts: Counter = Counter()
    for finding in report["findings"]:
        fix = finding["fix"]
        if fix is None:
            continue
        if fix["applicability"] != "display":
            counts[fix["applicability"]] += 1
        elif fix["reason"] is None:
            counts["display"] += 1
        elif fix["reason"].startswith("needs torch"):
            counts["held: torch floor"] += 1
        elif "chooses per backend" in fix["reason"]:
            counts["held: per-backend file"] += 1
        elif "names CUDA" in fix["reason"]:
            counts["held: the check decides CUDA code"] += 1
        elif "context" in fix["reason"]:
            counts["held: context"] += 1
        else:
            counts["held: CUDA-clean gate"] += 1
    return counts


def run(args: argparse.Namespace) -> dict:
    source = source_of(args.set)
    with tempfile.TemporaryDirectory(prefix="lockin-fix-") as scratch:
        copy = copy_set(source, Path(scratch))
        original = {p: (copy / p).read_bytes() for p in digests(copy)}  # the cache folder is outside the copy
        scan_s, scanned = audit(args, str(copy), "--format", "json", "--torch-version", args.torch_version)
        report = json.loads(scanned.stdout)
        # As a first run does: no cache yet; the scan of what remains after fixing reuses the one it wrote.
        cache = Path(scratch) / "cache"
        mode = [] if args.safe else ["--unsafe-fixes"]
        fix_s, fixed = audit(args, str(copy), "--fix", *mode, "--show-fixes", "--format", "json",
                             "--torch-version", args.torch_version, cache=cache)
        after = {p: d for p, d in digests(copy).items()}
        created = sorted(p for p in after if p not in original)
        changed = [p for p in after if p in original
                   and hashlib.blake2b(original[p], digest_size=16).hexdigest() != after[p]]
        lines, broken, rules = 0, [], Counter()
        changed_python = [p for p in changed if p.endswith(".py") and compiles(original[p].decode("utf-8", "replace"), p)
                          is None]
        for path in changed:
            old, new = original[path].decode("utf-8", "replace"), (copy / path).read_text("utf-8", "replace")
            lines += sum(1 for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="")
                         if line[:1] in "+-" and not line.startswith(("+++", "---")))
            if path.endswith(".py") and compiles(old, path) is None and (problem := compiles(new, path)):
                broken.append(f"{path}: {problem}")
        summary = re.search(r"fixed (\d+) findings? in (\d+) files?", fixed.stderr)
        for rule, count in re.findall(r"^\s+(\d+) × (LK\d+)", fixed.stderr, re.M):
            rules[count] += int(rule)
        warned = [line for line in fixed.stderr.splitlines() if line.startswith("audit: warning:")]
        second_s, second = audit(args, str(copy), "--fix", *mode, "--format", "json",
                                 "--torch-version", args.torch_version, cache=cache)
        unchanged = digests(copy) == after
        remaining_report = json.loads(fixed.stdout) if fixed.stdout.strip() else None
        remaining = remaining_report["summary"]["findings"] if remaining_report else None
    applied = int(summary.group(1)) if summary else 0
    through_owner = device_rules()
    # fixable: a rewrite exists for it (applied, unsafe, or held with a reason), as the plain scan shows,
    # or its rule rewrites through the device owner (which only the fix run knows)
    fixable = sum(1 for f in report["findings"] if f["fix"] is not None or f["rule"] in through_owner)
    raising_before = raising_files(report)
    raising_after = raising_files(remaining_report) if remaining_report else None
    info = {
        "set": str(args.set), "torch_version": args.torch_version, "jobs": args.jobs,
        "mode": "--fix" if args.safe else "--fix --unsafe-fixes",
        "files": report["summary"]["files"], "findings": report["summary"]["findings"],
        "fixes_by_class": dict(fix_classes(report)),
        "scan_s": round(scan_s, 2), "fix_s": round(fix_s, 2), "fix_vs_scan": round(fix_s / scan_s, 2),
        "fixes_applied": int(summary.group(1)) if summary else None, "files_changed": len(changed),
        "files_reported_changed": int(summary.group(2)) if summary else None,
        "lines_changed": lines, "fixes_by_rule": dict(sorted(rules.items())), "findings_after": remaining,
        "fixes_per_finding": round(applied / max(report["summary"]["findings"], 1), 4),
        "fixable_findings": fixable, "fixes_per_fixable_finding": round(applied / max(fixable, 1), 4),
        "python_files_raising_before": raising_before, "python_files_raising_after": raising_after,
        "share_made_clean": (round(1 - raising_after["any"] / raising_before["any"], 3)
                             if raising_after is not None and raising_before["any"] else None),
        "files_created": created,
        "compile_rate": f"{len(changed_python) - len(broken)}/{len(changed_python)}",
        "not_compiling": broken, "fixer_warnings": warned, "second_run_s": round(second_s, 2),
        "second_run_summary": next((line for line in second.stderr.splitlines() if re.search(r"fixed \d+ finding", line)),
                                   (second.stderr.strip().splitlines() or [""])[-1]),
        "second_run_unchanged": unchanged, "exit_codes": [scanned.returncode, fixed.returncode, second.returncode],
    }
    return info


TOTALS = ("files", "findings", "fixes_applied", "files_changed", "fixable_findings", "scan_s", "fix_s")


def each_project(args: argparse.Namespace) -> dict:
    """One run per top-level folder of the set (each package of the corpus is its own project, with
    its own device owner), and the totals over them."""
    runs = []
    for folder in sorted(p for p in source_of(args.set).iterdir() if p.is_dir()):
        runs.append(run(argparse.Namespace(**{**vars(args), "set": str(folder)})))
    total = {key: round(sum(r[key] or 0 for r in runs), 2) for key in TOTALS}
    for key in ("python_files_raising_before", "python_files_raising_after"):
        total[key] = {t: sum((r[key] or {}).get(t, 0) for r in runs) for t in (*RAISE_TARGETS, "any")}
    total["fixes_per_finding"] = round(total["fixes_applied"] / max(total["findings"], 1), 4)
    total["fixes_per_fixable_finding"] = round(total["fixes_applied"] / max(total["fixable_findings"], 1), 4)
    compiled = [tuple(map(int, r["compile_rate"].split("/"))) for r in runs]
    total["compile_rate"] = f"{sum(c for c, _ in compiled)}/{sum(n for _, n in compiled)}"
    before, after = total["python_files_raising_before"]["any"], total["python_files_raising_after"]["any"]
    total["share_made_clean"] = round(1 - after / before, 3) if before else None
    total["fix_vs_scan"] = round(total["fix_s"] / max(total["scan_s"], 0.01), 2)
    total["not_compiling"] = [b for r in runs for b in r["not_compiling"]]
    total["second_run_unchanged"] = all(r["second_run_unchanged"] for r in runs)
    total["second_run_summary"] = "; ".join(sorted({r["second_run_summary"] for r in runs}))
    total["files_created"] = [c for r in runs for c in r["files_created"]]
    return {"total": total, "projects": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="corpus", help="corpus, transformers, sample100 or a directory")
    parser.add_argument("--torch-version", default="2.13", help="the floor the fixes are judged against")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--safe", action="store_true", help="--fix without --unsafe-fixes")
    parser.add_argument("--each", action="store_true", help="one project per top-level folder of the set, and totals")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    info = each_project(args) if args.each else run(args)
    text = json.dumps(info, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    checked = info["total"] if args.each else info
    ok = not checked["not_compiling"] and checked["second_run_unchanged"] and all(
        part.startswith("audit: fixed 0 findings") for part in checked["second_run_summary"].split("; "))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
