"""Speed benchmark: audit cold, warm and on ten changed files, against TorchFix and the floors.

    python bench/run_bench.py                        # the 1-in-100 sample, 3 runs each
    python bench/run_bench.py --set transformers --runs 3
    python bench/run_bench.py --set corpus --runs 1 --torchfix never
    python bench/run_bench.py --set /some/dir

Sets: sample100 (every 100th .py file of the corpus), transformers, corpus (all 9 packages), or
a directory. The corpus is looked for in $LOCKIN_CORPUS, ../corpus/c beside the repository, then
bench/.corpus/c; when missing it is built with ../shared/corpus/make_corpus.sh (pinned,
checksummed). The set is copied to a scratch folder first, so the "ten changed files" runs can
edit files without touching the corpus.

Every command runs as its own process; wall time is measured around start..reap and peak memory
is the largest single process's max RSS (wait4). Each figure is the median of --runs runs.
Measured: reading every file (I/O floor), the libcst parse floor (libcst.parse_module over exactly
the files audit parses, on --jobs processes), audit cold (an empty cache folder, which the run
fills as a first run does), audit warm (unchanged tree),
ten changed files as pre-commit runs it (PRE_COMMIT=1, the files on the command line, split into
one batch per core run side by side, as pre-commit does) and as a whole-tree re-run, and TorchFix 0.7.0 in its own virtualenv (created on first use)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TORCHFIX_VENV = Path(os.environ.get("LOCKIN_BENCH_VENVS", REPO.parent / "bench-venvs")) / "torchfix"
TORCHFIX_VERSION = "0.7.0"
PACKAGES = {"transformers": "transformers-5.24.0"}
TARGETS = {"cold_vs_torchfix": 0.10, "cold_vs_parse_floor": 1.5, "warm_s": 1.0, "precommit_s": 1.0,
           "peak_mib": 300.0}


# -- the set ---------------------------------------------------------------------------------------
def corpus_dir() -> Path:
    candidates = [os.environ.get("LOCKIN_CORPUS"), REPO.parent / "corpus" / "c", REPO / "bench" / ".corpus" / "c"]
    for candidate in candidates:
        if candidate and (Path(candidate) / PACKAGES["transformers"]).is_dir():
            return Path(candidate)
    target = REPO / "bench" / ".corpus" / "c"
    print(f"building the pinned corpus in {target} (make_corpus.sh) ...", file=sys.stderr)
    subprocess.run(["bash", str(SHARED / "corpus" / "make_corpus.sh"), str(target), "100"], check=True)
    return target


def source_of(name: str) -> Path:
    if os.path.isdir(name):
        return Path(name).resolve()
    corpus = corpus_dir()
    if name == "sample100":
        sample = corpus.parent / f"{corpus.name}-sample100"
        if not sample.is_dir():
            subprocess.run(["bash", str(SHARED / "corpus" / "make_corpus.sh"), str(corpus), "100"], check=True)
        return sample
    if name == "corpus":
        return corpus
    return corpus / PACKAGES[name]


def copy_set(source: Path, scratch: Path) -> Path:
    """Copy what audit reads (Python, CUDA, requirements, setup files) into a scratch folder."""
    sys.path.insert(0, str(REPO))
    from auditor.discover.walk import discover

    found = discover([str(source)], str(source))
    dest = scratch / "set"
    for item in found.files:
        target = dest / item.display
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(item.path, target)
    return dest


# -- measuring one command ------------------------------------------------------------------------
class TreePeak:
    """The largest peak RSS (VmHWM) of any process in a command's tree, polled from /proc.

    wait4's ru_maxrss only covers descendants that their parent reaped: a multiprocessing
    forkserver and its workers are never reaped by audit itself, so they would go uncounted."""

    def __init__(self, roots: list[int], interval: float = 0.05) -> None:
        self.roots = set(roots)
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kib / 1024

    def _poll(self) -> None:
        while not self._stop.is_set():
            for pid in self._tree():
                self.peak_kib = max(self.peak_kib, _hwm_kib(pid))
            self._stop.wait(self.interval)

    def _tree(self) -> set[int]:
        """The roots and their descendants, through /proc/PID/task/TID/children."""
        tree: set[int] = set()
        todo = list(self.roots)
        while todo:
            pid = todo.pop()
            tree.add(pid)
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                        todo.extend(int(child) for child in handle.read().split())
                except (OSError, ValueError):
                    continue
        return tree


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB of the largest process in the tree, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree = TreePeak([proc.pid]) if os.path.isdir("/proc") else None
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    polled = tree.stop() if tree is not None else 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-2000:]}")
    return wall, max(usage.ru_maxrss / 1024, polled), proc.returncode


def measure_together(cmds: list[list[str]], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float]:
    """Start the commands at once (as pre-commit runs its batches) and time until the last ends."""
    start = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in cmds]
    tree = TreePeak([p.pid for p in procs]) if os.path.isdir("/proc") else None
    peak = 0.0
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"command failed ({proc.returncode}): {' '.join(proc.args)}")
        peak = max(peak, usage.ru_maxrss / 1024)
    wall = time.perf_counter() - start
    return wall, max(peak, tree.stop() if tree is not None else 0.0)


def batches(files: list[str], jobs: int) -> list[list[str]]:
    """pre-commit's split of the file list: one batch per core, consecutive files together."""
    size = -(-len(files) // max(1, jobs))
    return [files[i:i + size] for i in range(0, len(files), size)]


class Series:
    def __init__(self, name: str) -> None:
        self.name = name
        self.walls: list[float] = []
        self.peaks: list[float] = []

    def add(self, wall: float, peak: float) -> None:
        self.walls.append(wall)
        self.peaks.append(peak)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def row(self) -> dict:
        return {"name": self.name, "runs": len(self.walls), "median_s": self.median, "min_s": min(self.walls),
                "max_s": max(self.walls), "peak_mib": max(self.peaks)}


# -- the commands -----------------------------------------------------------------------------------
def audit_supports_cache_flags(audit: str) -> bool:
    out = subprocess.run([audit, "scan", "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "300"}).stdout
    return "--cache-dir" in out and "--jobs" in out


def audit_cmd(args: argparse.Namespace, paths: list[str], cache_dir: Path | None) -> list[str]:
    """The CLI when it has --jobs/--cache-dir, else this script's `scan` helper (same engine call)."""
    if args.cli:
        cmd = [args.audit, "scan", *paths, "--format", "json", "--output", os.devnull, "--jobs", str(args.jobs)]
        return cmd + (["--cache-dir", str(cache_dir)] if cache_dir else ["--no-cache"])
    cmd = [args.python, str(Path(__file__)), "_scan", "--jobs", str(args.jobs), *paths]
    return cmd + (["--cache-dir", str(cache_dir)] if cache_dir else [])


def helper(args: argparse.Namespace, *rest: str) -> list[str]:
    return [args.python, str(Path(__file__)), *rest]


def ensure_torchfix() -> Path:
    exe = TORCHFIX_VENV / "bin" / "torchfix"
    if not exe.exists():
        print(f"creating {TORCHFIX_VENV} with TorchFix=={TORCHFIX_VERSION} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(TORCHFIX_VENV)], check=True)
        subprocess.run([str(TORCHFIX_VENV / "bin" / "pip"), "install", "-q", f"TorchFix=={TORCHFIX_VERSION}"], check=True)
    return exe


def changed_files(candidates: list[str], count: int = 10) -> list[str]:
    """Ten files audit parses, spread evenly over the sorted list (not the ten largest)."""
    ordered = sorted(candidates)
    step = max(1, len(ordered) // count)
    return ordered[::step][:count]


def clean_files(info: dict, count: int = 10) -> list[str]:
    """Ten Python files the prefilter rules out, spread evenly like `changed_files`."""
    parsed = set(info["parsed_python"])
    candidates = [n for n in info["all"] if n.endswith(".py") and n not in parsed and not n.endswith("setup.py")]
    return changed_files(candidates, count)


def prepare_interpreter(args: argparse.Namespace) -> None:
    """Measure audit as an installed copy runs: with its bytecode compiled (pip compiles it at
    install; an editable install under PYTHONDONTWRITEBYTECODE would compile every module on
    every run)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([args.python, "-m", "compileall", "-q", str(REPO / "auditor")], check=True)


def edit(files: list[str], root: Path, stamp: int) -> dict[str, bytes]:
    originals = {}
    for name in files:
        path = root / name
        originals[name] = path.read_bytes()
        path.write_bytes(originals[name] + f"\n# bench edit {stamp}\n".encode())
    return originals


def restore(originals: dict[str, bytes], root: Path) -> None:
    for name, data in originals.items():
        (root / name).write_bytes(data)


# -- the run ----------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict:
    source = source_of(args.set)
    scratch = Path(tempfile.mkdtemp(prefix="lockin-bench-"))
    try:
        root = copy_set(source, scratch)
        return run_on(args, root, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_on(args: argparse.Namespace, root: Path, scratch: Path) -> dict:
    lists = scratch / "lists.json"
    subprocess.run(helper(args, "_lists", str(root), str(lists)), check=True)
    info = json.loads(lists.read_text())
    series: dict[str, Series] = {k: Series(k) for k in (
        "read floor", "libcst parse floor", "audit cold", "audit warm", "10 changed: pre-commit",
        "10 changed: whole tree", "10 changed: parse floor", "10 changed, no lock-in: pre-commit", "TorchFix")}
    cache = scratch / "cache"
    changed = changed_files(info["parsed_python"])
    changed_lists = scratch / "changed.json"
    changed_lists.write_text(json.dumps({**info, "parsed_python": changed}))
    clean = clean_files(info)
    torchfix = ensure_torchfix() if want_torchfix(args, info) else None
    pre_env = {**os.environ, "PRE_COMMIT": "1"}
    for rep in range(args.runs):
        print(f"run {rep + 1}/{args.runs} ...", file=sys.stderr)
        series["read floor"].add(*measure(helper(args, "_read", str(lists)))[:2])
        series["libcst parse floor"].add(*measure(helper(args, "_parse", str(lists), "--jobs", str(args.jobs)))[:2])
        shutil.rmtree(cache, ignore_errors=True)
        # Cold: no cache yet (the run writes one, as a first run does); warm: the same again.
        series["audit cold"].add(*measure(audit_cmd(args, [str(root)], cache))[:2])
        series["audit warm"].add(*measure(audit_cmd(args, [str(root)], cache))[:2])
        # Each edit is new content, so no cached entry can stand in for it.
        originals = edit(changed, root, 2 * rep)
        try:
            cmds = [audit_cmd(args, batch, cache) for batch in batches(changed, args.jobs)]
            series["10 changed: pre-commit"].add(*measure_together(cmds, cwd=root, env=pre_env))
            edit(changed, root, 2 * rep + 1)
            series["10 changed: whole tree"].add(*measure(audit_cmd(args, [str(root)], cache))[:2])
        finally:
            restore(originals, root)
        series["10 changed: parse floor"].add(*measure(helper(args, "_parse", str(changed_lists), "--jobs",
                                                             str(args.jobs)))[:2])
        # The common commit: edited files without any lock-in token (the prefilter rules them out).
        originals = edit(clean, root, 2 * rep)
        try:
            cmds = [audit_cmd(args, batch, cache) for batch in batches(clean, args.jobs)]
            series["10 changed, no lock-in: pre-commit"].add(*measure_together(cmds, cwd=root, env=pre_env))
        finally:
            restore(originals, root)
        if torchfix is not None:
            series["TorchFix"].add(*measure([str(torchfix), str(root)])[:2])
    return report(args, info, [s for s in series.values() if s.walls])


def want_torchfix(args: argparse.Namespace, info: dict) -> bool:
    if args.torchfix == "never":
        return False
    return args.torchfix == "always" or info["python_files"] <= 1000


def report(args: argparse.Namespace, info: dict, series: list[Series]) -> dict:
    rows = {s.name: s.row() for s in series}
    by_name = {s.name: s for s in series}
    cold = rows["audit cold"]["median_s"]
    # Each run measures the floor and audit back to back: their ratio is the least exposed to the
    # machine's speed drifting between runs.
    pairs = [c / f for c, f in zip(by_name["audit cold"].walls, by_name["libcst parse floor"].walls, strict=True)]
    ratios = {
        "cold / parse floor": cold / rows["libcst parse floor"]["median_s"],
        "cold / parse floor, per run (median)": statistics.median(pairs),
        "cold / read floor": cold / rows["read floor"]["median_s"],
    }
    if "TorchFix" in rows:
        ratios["cold / TorchFix"] = cold / rows["TorchFix"]["median_s"]
    checks = {
        "cold <= 1/10 TorchFix": ratios.get("cold / TorchFix", float("nan")) <= TARGETS["cold_vs_torchfix"]
        if "TorchFix" in rows else None,
        "cold <= 1.5 x parse floor (per run)":
            ratios["cold / parse floor, per run (median)"] <= TARGETS["cold_vs_parse_floor"],
        "warm < 1 s": rows["audit warm"]["median_s"] < TARGETS["warm_s"],
        "10 changed (pre-commit) < 1 s": rows["10 changed: pre-commit"]["median_s"] < TARGETS["precommit_s"],
        "10 changed, no lock-in (pre-commit) < 1 s":
            rows["10 changed, no lock-in: pre-commit"]["median_s"] < TARGETS["precommit_s"],
        "peak < 300 MiB": max(r["peak_mib"] for n, r in rows.items() if n.startswith("audit")) < TARGETS["peak_mib"],
    }
    print_table(args, info, rows, ratios, checks)
    return {"set": args.set, "jobs": args.jobs, "info": {k: v for k, v in info.items() if k != "parsed_python"},
            "rows": rows, "ratios": ratios, "checks": checks}


def print_table(args: argparse.Namespace, info: dict, rows: dict, ratios: dict, checks: dict) -> None:
    print(f"\nset {args.set}: {info['python_files']} .py files ({info['python_bytes'] / 1e6:.1f} MB), "
          f"{info['files']} files audit reads; audit parses {len(info['parsed_python'])} .py files "
          f"({info['parsed_bytes'] / 1e6:.1f} MB); jobs {args.jobs}; medians of {args.runs} run(s)")
    cold = rows["audit cold"]["median_s"]
    print(f"{'':36} {'median s':>9} {'min-max s':>17} {'peak MiB':>9} {'x audit cold':>13}")
    for name, row in rows.items():
        spread = f"{row['min_s']:.3f}-{row['max_s']:.3f}"
        print(f"{name:36} {row['median_s']:9.3f} {spread:>17} {row['peak_mib']:9.1f} {row['median_s'] / cold:13.3f}")
    print()
    for name, value in ratios.items():
        print(f"{name:36} {value:9.3f}")
    print()
    for name, ok in checks.items():
        print(f"{name:44} {'n/a' if ok is None else ('PASS' if ok else 'FAIL')}")


# -- helpers run as their own processes ----------------------------------------------------------
def cmd_lists(root: str, out: str) -> None:
    """Every file audit reads, and the Python files it parses (passing the same prefilter)."""
    sys.path.insert(0, str(REPO))
    from auditor.checks.registry import full_catalogue, select_rules
    from auditor.discover.walk import discover
    from auditor.pipeline.runtime import Runtime

    found = discover([root], root)
    runtime = Runtime(select_rules(), full_catalogue())
    parsed, parsed_bytes, py_bytes, py = [], 0, 0, 0
    for item in found.files:
        data = Path(item.path).read_bytes()
        if item.kind in ("python", "setup-py"):
            py += 1
            py_bytes += len(data)
            if runtime.needs_check(item, data):
                parsed.append(item.display)
                parsed_bytes += len(data)
    Path(out).write_text(json.dumps({
        "root": root, "files": len(found.files), "all": [f.display for f in found.files], "python_files": py,
        "python_bytes": py_bytes, "parsed_python": parsed, "parsed_bytes": parsed_bytes}))


def cmd_read(lists: str) -> None:
    info = json.loads(Path(lists).read_text())
    total = 0
    for name in info["all"]:
        with open(os.path.join(info["root"], name), "rb") as handle:
            total += len(handle.read())


def _parse_one(path: str) -> int:
    import libcst

    with open(path, "rb") as handle:
        data = handle.read()
    try:
        libcst.parse_module(data.decode("utf-8"))
    except Exception:
        return 0
    return 1


def cmd_parse(lists: str, jobs: int) -> None:
    """libcst.parse_module over the files audit parses, largest first, on `jobs` processes."""
    import multiprocessing

    info = json.loads(Path(lists).read_text())
    paths = sorted((os.path.join(info["root"], n) for n in info["parsed_python"]), key=os.path.getsize, reverse=True)
    if jobs <= 1:
        for path in paths:
            _parse_one(path)
        return
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        list(pool.imap_unordered(_parse_one, paths, chunksize=4))


def cmd_scan(paths: list[str], jobs: int, cache_dir: str | None) -> int:
    """What `audit scan PATHS -f json -o /dev/null` does, for a CLI without --jobs/--cache-dir."""
    sys.path.insert(0, str(REPO))
    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan
    from auditor.portability.score import compute_scores
    from auditor.report.json_report import render_json

    result = scan(paths, Settings(jobs=jobs, cache=cache_dir is not None, cache_dir=cache_dir))
    render_json(result, compute_scores(result.findings))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("_"):
        return internal(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="sample100", help="sample100 | transformers | corpus | a directory")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--torchfix", choices=("auto", "always", "never"), default="auto",
                        help="auto: only on sets of at most 1,000 Python files (it takes ~0.4 s per file)")
    parser.add_argument("--audit", default=shutil.which("audit", path=str(Path(sys.executable).parent)) or "audit")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    args.python = sys.executable
    prepare_interpreter(args)
    args.cli = audit_supports_cache_flags(args.audit)
    if not args.cli:
        print("note: `audit` has no --jobs/--cache-dir yet; timing the same engine call through this script",
              file=sys.stderr)
    result = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def internal(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--cache-dir")
    args = parser.parse_intermixed_args(argv)
    if args.command == "_lists":
        cmd_lists(*args.paths)
    elif args.command == "_read":
        cmd_read(args.paths[0])
    elif args.command == "_parse":
        cmd_parse(args.paths[0], args.jobs)
    elif args.command == "_scan":
        return cmd_scan(args.paths, args.jobs, args.cache_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
