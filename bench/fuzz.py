"""Fuzz `audit` with mutated real files: no crash, no hang, serial == parallel.

    python bench/fuzz.py [--corpus DIR] [--files 10000] [--seed 7] [--jobs 2] [--timeout 1800]

The corpus is found as bench/run_bench.py finds it ($LOCKIN_CORPUS, ../corpus/c, bench/.corpus/c).

Copies a seeded sample of the files audit reads (Python, requirements, pyproject.toml,
setup.cfg, CUDA) from the corpus into a temporary folder (the corpus is never written), mutates
each one (byte flips, cut and duplicated slices, truncation, lone CRs, NULs, BOMs, bad UTF-8,
coding cookies, form feeds and line separators, unterminated strings and comments, deep brackets
and long operator, `and`, `lambda` and conditional chains, bytes spliced in from another file),
then runs the real command line twice, `--jobs 1` and `--jobs N`, each in its own process with a
deadline and its own string-hash seed (PYTHONHASHSEED, so a report that follows set order shows), and prints crashes (a signal, a traceback, an exit code other than 0 or 1, an
`internal` error entry), hangs (the deadline), the error entries by kind, and whether the two
JSON reports are identical once their run-specific `run` object is set aside. Exit code 1 when
any crash, hang or difference was seen."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from auditor.discover.files import name_kind  # noqa: E402  (after the path)

_RUN = re.compile(r'\n  "run": \{[^\n]*\},?')


def sample(corpus: Path, count: int, rng: random.Random) -> list[Path]:
    """`count` files audit reads, chosen with `rng` from the sorted list (so a seed is a sample)."""
    found = []
    for folder, dirs, names in os.walk(corpus):
        dirs.sort()
        parent = os.path.basename(folder)
        for name in sorted(names):
            if name_kind(name, False, parent) is not None:
                found.append(Path(folder) / name)
    return sorted(rng.sample(found, min(count, len(found))))


def _chain(rng: random.Random) -> bytes:
    n = rng.choice([50, 300, 1200, 3000, 8000])
    return rng.choice([
        b"(" * min(n, 400) + b"x" + b")" * min(n, 400),
        b"x = (" + b" and\n".join([b"a"] * n) + b")\n",
        b"x = " + b"lambda: " * n + b"1\n",
        b"x = (" + b" if c else\n".join([b"a"] * n) + b")\n",
        b"x = a" + b".b()" * n + b"\n",
        b"x = a" + b" + a" * n + b"\n",
        b"x = " + b"not " * n + b"a\n",
        b"x = " + b"-" * n + b"1\n",
        b"[" + b" " * n + b"\n",
        b"/*" * n,
        b'"\\' * n,
    ])


def mutate(data: bytes, donor: bytes, rng: random.Random) -> bytes:
    """One to three mutations of `data`."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        size = len(out)
        at = rng.randint(0, size) if size else 0
        kind = rng.randrange(14)
        if kind == 0 and size:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                out[rng.randrange(size)] = rng.randrange(256)
        elif kind == 1 and size:  # cut a slice
            end = min(size, at + rng.randint(1, 400))
            del out[at:end]
        elif kind == 2 and size:  # duplicate a slice
            end = min(size, at + rng.randint(1, 400))
            out[at:at] = out[at:end] * rng.randint(1, 20)
        elif kind == 3:  # truncate
            del out[at:]
        elif kind == 4:  # line ends
            out = bytearray(bytes(out).replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\r", b"\x0c\n"])))
        elif kind == 5:
            out[at:at] = rng.choice([b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3\x28", b"\xed\xa0\x80", b"\x85",
                                     "\u2028".encode(), b"\x0c", b"\x1c", b"\x0b"])
        elif kind == 6:  # coding cookies, good and bad
            cookie = rng.choice([b"# -*- coding: latin-1 -*-\n", b"# coding: klingon\n", b"# vim: set fileencoding=utf-16 :\n",
                                 b"#!/usr/bin/env python\r# coding: cp1252\r"])
            out[0:0] = cookie
        elif kind == 7:  # unterminated literals and comments
            out[at:at] = rng.choice([b'"""', b"'''", b'"', b"/*", b"#", b"\\", b"[", b"{", b"(", b"f'{"])
        elif kind == 8:
            out[at:at] = _chain(rng)
        elif kind == 9 and donor:  # splice another file in
            start = rng.randrange(len(donor))
            out[at:at] = donor[start:start + rng.randint(1, 2000)]
        elif kind == 10:  # lock-in text in odd places
            out[at:at] = rng.choice([b"torch.cuda.synchronize()\n", b"x.cuda()", b"\n-r ../outside.txt\n",
                                     b"\n-r /dev/zero\n", b"nvidia-cudnn-cu12\n", b"# lockin: ignore\n"])
        elif kind == 11:  # tabs and indentation
            out = bytearray(bytes(out).replace(b"    ", rng.choice([b"\t", b"  \t", b" " * 9])))
        elif kind == 12 and size:  # swap halves
            out = out[at:] + out[:at]
        else:  # nothing: some files stay as they were
            pass
    return bytes(out)


def run(args: list[str], cwd: Path, timeout: float, hash_seed: int) -> dict:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": str(hash_seed)}
    proc = subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        hung = True
    return {"code": proc.returncode, "hung": hung, "stdout": out, "stderr": err.decode("utf-8", "replace"),
            "seconds": time.perf_counter() - start}


def crashed(outcome: dict) -> list[str]:
    problems = []
    if outcome["hung"]:
        problems.append("hung (deadline)")
    elif outcome["code"] not in (0, 1):
        problems.append(f"exit code {outcome['code']}")
    if "Traceback" in outcome["stderr"] or "internal error" in outcome["stderr"]:
        problems.append("traceback or internal error on stderr")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="default: the benchmark corpus")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800, help="deadline per audit run, in seconds")
    parser.add_argument("--keep", action="store_true", help="keep the mutated tree and the reports")
    options = parser.parse_args()
    if options.corpus is None:
        sys.path.insert(0, str(ROOT / "bench"))
        from run_bench import corpus_dir

        options.corpus = corpus_dir()
    if not options.corpus.is_dir():
        print(f"corpus not found: {options.corpus}", file=sys.stderr)
        return 2
    rng = random.Random(options.seed)
    chosen = sample(options.corpus, options.files, rng)
    work = Path(tempfile.mkdtemp(prefix="lockin-fuzz-"))
    tree = work / "tree"
    kinds: Counter = Counter()
    for path in chosen:
        data = path.read_bytes()
        donor = chosen[rng.randrange(len(chosen))].read_bytes()
        target = tree / path.relative_to(options.corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(mutate(data, donor, rng))
        kinds[name_kind(path.name, False, path.parent.name)] += 1
    print(f"seed {options.seed}: {len(chosen)} files mutated into {tree} ({dict(sorted(kinds.items()))})")

    reports = {}
    failures = 0
    # Each run with its own string-hash seed: a report that follows set order differs between them.
    for label, jobs, hash_seed in (("serial", 1, 1), ("parallel", options.jobs, 2)):
        output = work / f"{label}.json"
        outcome = run([str(tree), "--format", "json", "--no-cache", "--jobs", str(jobs), "-o", str(output)],
                      work, options.timeout, hash_seed)
        problems = crashed(outcome)
        print(f"{label} (--jobs {jobs}): exit {outcome['code']} in {outcome['seconds']:.0f} s"
              + (f"; PROBLEMS: {', '.join(problems)}" if problems else ""))
        if problems:
            failures += 1
            print(outcome["stderr"][-2000:])
        reports[label] = output.read_text(encoding="utf-8") if output.exists() else ""

    serial = json.loads(reports["serial"]) if reports["serial"] else {}
    errors = serial.get("errors", [])
    by_kind = Counter(e["kind"] for e in errors)
    internal = [e for e in errors if e["kind"] in ("internal", "crash", "timeout")]
    print(f"findings {len(serial.get('findings', []))}, error entries {len(errors)} in "
          f"{len({e['path'] for e in errors})} files: {dict(sorted(by_kind.items()))}")
    for entry in internal[:20]:
        print(f"  {entry['kind']}: {entry['path']}: {entry['message']}")
    failures += sum(1 for e in internal if e["kind"] == "internal")
    same = _RUN.sub("", reports["serial"]) == _RUN.sub("", reports["parallel"]) != ""
    print(f"serial and parallel reports identical (apart from `run`): {'yes' if same else 'NO'}")
    failures += not same
    if options.keep:
        print(f"kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
