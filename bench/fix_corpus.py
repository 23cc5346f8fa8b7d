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
        fix_s, fixed = audit(args, str(copy), "--fix", "--unsafe-fixes", "--show-fixes", "--format", "json",
                             "--torch-version", args.torch_version, cache=cache)
        after = {p: d for p, d in digests(copy).items()}
        changed = [p for p in after if hashlib.blake2b(original[p], digest_size=16).hexdigest() != after[p]]
        lines, broken, rules = 0, [], Counter()
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
        second_s, second = audit(args, str(copy), "--fix", "--unsafe-fixes", "--format", "json",
                                 "--torch-version", args.torch_version, cache=cache)
        unchanged = digests(copy) == after
        remaining = json.loads(fixed.stdout)["summary"]["findings"] if fixed.stdout.strip() else None
    info = {
        "set": str(args.set), "torch_version": args.torch_version, "jobs": args.jobs,
        "files": report["summary"]["files"], "findings": report["summary"]["findings"],
        "fixes_by_class": dict(fix_classes(report)),
        "scan_s": round(scan_s, 2), "fix_s": round(fix_s, 2), "fix_vs_scan": round(fix_s / scan_s, 2),
        "fixes_applied": int(summary.group(1)) if summary else None, "files_changed": len(changed),
        "files_reported_changed": int(summary.group(2)) if summary else None,
        "lines_changed": lines, "fixes_by_rule": dict(sorted(rules.items())), "findings_after": remaining,
        "not_compiling": broken, "fixer_warnings": warned, "second_run_s": round(second_s, 2),
        "second_run_summary": (second.stderr.strip().splitlines() or [""])[-1],
        "second_run_unchanged": unchanged, "exit_codes": [scanned.returncode, fixed.returncode, second.returncode],
    }
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="corpus", help="corpus, transformers, sample100 or a directory")
    parser.add_argument("--torch-version", default="2.13", help="the floor the fixes are judged against")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    info = run(args)
    text = json.dumps(info, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    ok = not info["not_compiling"] and info["second_run_unchanged"] and "fixed 0 findings" in info["second_run_summary"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
