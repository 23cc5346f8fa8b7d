"""Checking the candidate files over a pool of processes.

Each worker builds its Runtime once (under fork it inherits the parent's), reads its files itself
(the parent never holds the candidates' bytes, which keeps its memory flat) and returns the
results with a digest of the bytes it checked, for the cache. Work goes out in chunks, largest
files first, so that no big file is left for the end; the caller puts the results back in file
order, so a parallel run reports exactly what a serial one does."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from auditor.analysis.project import ProjectInfo
from auditor.discover.files import SourceFile
from auditor.fix.floor import TorchFloor
from auditor.model import FileError, FileResult
from auditor.sandbox.interpreter import context_for, forkserver_context
from auditor.sandbox.isolate import IsolationFailure, deadline_for, limit_memory, run_isolated
from auditor.sandbox.lifetime import die_with_parent

if TYPE_CHECKING:  # the pool's modules load only when a pool runs (~40 ms a serial run saves)
    import multiprocessing.context
    from concurrent.futures import Future

    from auditor.config.settings import Settings
    from auditor.pipeline.runtime import Runtime

# Below this many candidate bytes (after the prefilter) a pool costs more than it saves:
# starting two forked workers takes ~0.05 s and libcst parses + walks ~150 kB/s per core.
SERIAL_BYTES = 48 * 1024
SERIAL_FILES = 2
# Above this many bytes still to read, the workers read and prefilter too (the parent would
# otherwise spend seconds on it while they wait).
POOL_PREFILTER_BYTES = 8 * 1024 * 1024
CHUNK_MIN_BYTES = 32 * 1024
CHUNK_MAX_BYTES = 1024 * 1024
CHUNK_MAX_FILES = 16

# (index in the scan, file, size in bytes, cached digest: when the bytes still hash to it, the
# worker returns no result and the cached one stands)
Task = tuple[int, SourceFile, int, "str | None"]
Outcome = tuple[int, "FileResult | None", "str | None"]  # (index, result, digest of the bytes checked)

_runtime: Runtime | None = None  # the parent's, inherited by forked workers
_worker: tuple[Runtime, bool] | None = None
# Shared with the parent: per worker, (pid, index of the file it is checking or -1). When a worker
# dies, the parent knows which file it was on and checks that one file in isolation only.
_slots: Any = None
_slot: int | None = None
# A worker's address space may grow this far past its start (a backstop: MAX_PARSE_UNITS keeps a
# file's parse far below it); beyond, the worker fails alone instead of exhausting the machine.
WORKER_MEMORY_BYTES = 3 * 1024 * 1024 * 1024


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_jobs(jobs: int | None) -> int:
    """--jobs, never more than the cores this process may run on (more only adds memory)."""
    cores = available_cores()
    return cores if jobs is None or jobs <= 0 else min(jobs, cores)


def run_serially(jobs: int, tasks: Sequence[Task]) -> bool:
    """Small inputs, one job and pre-commit runs (many short invocations side by side) stay in-process."""
    if jobs <= 1 or not tasks or os.environ.get("PRE_COMMIT") == "1":
        return True
    return len(tasks) < SERIAL_FILES or sum(t[2] for t in tasks) < SERIAL_BYTES


def prefilter_in_pool(jobs: int, tasks: Sequence[Task]) -> bool:
    return not run_serially(jobs, tasks) and sum(t[2] for t in tasks) >= POOL_PREFILTER_BYTES


def chunks(tasks: Sequence[Task], jobs: int) -> list[list[Task]]:
    """Largest files first, grouped so every worker gets several chunks to balance with."""
    ordered = sorted(tasks, key=lambda t: (-t[2], t[0]))
    total = sum(t[2] for t in ordered)
    target = max(CHUNK_MIN_BYTES, min(CHUNK_MAX_BYTES, total // (jobs * 12) or 1))
    out: list[list[Task]] = []
    current: list[Task] = []
    weight = 0
    for task in ordered:
        current.append(task)
        weight += task[2]
        if weight >= target or len(current) >= CHUNK_MAX_FILES:
            out.append(current)
            current, weight = [], 0
    if current:
        out.append(current)
    return out


def _init_worker(codes: tuple[str, ...], max_bytes: int, hashing: bool, settings: Settings | None = None,
                 floor: tuple[str | None, str] = (None, ""), root: str | None = None, slots: Any = None,
                 run_pid: int | None = None, project_root: str | None = None) -> None:
    global _worker, _slots, _slot
    die_with_parent(run_pid=run_pid)
    limit_memory(WORKER_MEMORY_BYTES)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    _slots, _slot = slots, _claim(slots)
    runtime = _runtime
    if (runtime is None or tuple(r.code for r in runtime.rules) != codes or runtime.max_bytes != max_bytes
            or runtime.settings != settings or (runtime.floor.version, runtime.floor.source) != floor
            or runtime.root != root or runtime.project.root != project_root):
        # libcst and the rules: only a worker that did not inherit the parent's Runtime builds one (runs whose changed
        # files the cached prefilter decides import this module too)
        from auditor.checks.registry import rule_by_code
        from auditor.pipeline.runtime import Runtime, catalogue_for

        rules = [rule for rule in (rule_by_code(code) for code in codes) if rule is not None]
        runtime = Runtime(rules, catalogue_for(settings), max_bytes, settings, TorchFloor(*floor),
                          ProjectInfo(project_root) if project_root is not None else None, root=root)
    _worker = (runtime, hashing)


def _claim(slots: Any) -> int | None:
    if slots is None:
        return None
    with slots.get_lock():
        for k in range(0, len(slots), 2):
            if slots[k] == 0:
                slots[k], slots[k + 1] = os.getpid(), -1
                return k
    return None


def _check_chunk(chunk: list[Task]) -> list[Outcome]:
    # libcst: only a worker, which checks files
    from auditor.python.scan import unvalidated_parsing

    assert _worker is not None
    runtime, hashing = _worker
    outcomes: list[Outcome] = []
    with unvalidated_parsing():
        for index, source, _, expected in chunk:
            if _slot is not None:
                _slots[_slot + 1] = index
            outcomes.append((index, *runtime.check_with_digest(source, hashing, expected)))
    if _slot is not None:
        _slots[_slot + 1] = -1
    return outcomes


# What a worker needs: started from a fresh interpreter that preloads only these, a worker holds
# no CLI, report or discovery state.
WORKER_MODULES = ["auditor._forkserver_init", "libcst", "auditor.pipeline.runtime", "auditor.pipeline.parallel", "auditor.python.scan"]
# libcst needs ~600 bytes of memory per byte of source while parsing: from this size on, a file
# takes over 150 MB and what a forked worker inherits from the parent starts to matter.
LARGE_FILE_BYTES = 256 * 1024


def _context(tasks: Sequence[Task]) -> multiprocessing.context.BaseContext:
    """fork starts workers fastest (~0.4 s sooner), and they inherit the parent's Runtime. Big runs
    and runs with a very large file fork their workers from a lean server process instead: a
    forked worker's resident memory starts at the parent's (CLI, discovery and cache state)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    big = sum(t[2] for t in tasks) >= POOL_PREFILTER_BYTES or max(t[2] for t in tasks) >= LARGE_FILE_BYTES
    if big and "forkserver" in methods:
        return forkserver_context(WORKER_MODULES)  # started isolated from the working directory
    return context_for("fork" if "fork" in methods else "spawn")


def check_in_pool(runtime: Runtime, tasks: Sequence[Task], jobs: int, hashing: bool,
                  advance: Callable[[int], None] | None = None,
                  started: Callable[[], None] | None = None) -> tuple[list[Outcome], list[str]]:
    """Every task's outcome (in no particular order) and warnings.

    When a worker dies (a crash in native code, the memory backstop, the OOM killer), the files
    the workers were on are checked one by one in isolated children (auditor/sandbox/isolate.py) and the
    rest go to a fresh pool: a file that killed a worker is never checked in this process. Only
    when no pool can start at all does the rest run here."""
    global _runtime
    outcomes: list[Outcome] = []
    warnings: list[str] = []
    remaining = list(tasks)
    _runtime = runtime
    try:
        while remaining:
            done: set[int] = set()
            try:
                _run_pool(runtime, remaining, jobs, hashing, outcomes, done, advance, started)
                break
            except _PoolBroke as broke:
                suspects = [t for t in remaining if t[0] in broke.suspects and t[0] not in done]
                warnings.append(f"a worker process died ({broke.reason}); "
                                f"{len(suspects)} file(s) it was checking are checked again in isolation")
                for task in suspects:
                    outcomes.append(_check_isolated(runtime, task, hashing))
                    done.add(task[0])
                    if advance is not None:
                        advance(task[2])
                if not suspects and not done:  # no worker ever got going: nothing to blame
                    warnings.append("parallel checking made no progress; finishing in one process")
                    _check_here(runtime, [t for t in remaining if t[0] not in done], hashing, outcomes, advance)
                    break
                remaining = [t for t in remaining if t[0] not in done]
            except (OSError, EOFError) as exc:  # no pool at all (no /dev/shm, no processes, a server that
                # died starting): nothing crashed
                warnings.append(f"parallel checking failed ({type(exc).__name__}: {exc}); finishing in one process")
                _check_here(runtime, [t for t in remaining if t[0] not in done], hashing, outcomes, advance)
                break
    finally:
        _runtime = None
    return outcomes, warnings


class _PoolBroke(Exception):
    def __init__(self, reason: str, suspects: set[int]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.suspects = suspects


def _run_pool(runtime: Runtime, tasks: Sequence[Task], jobs: int, hashing: bool, outcomes: list[Outcome],
              done: set[int], advance: Callable[[int], None] | None, started: Callable[[], None] | None) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    work = chunks(tasks, jobs)
    workers = min(jobs, len(work))
    context = _context(tasks)
    slots = context.Array("q", 2 * workers)
    codes = tuple(rule.code for rule in runtime.rules)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                 initargs=(codes, runtime.max_bytes, hashing, runtime.settings,
                                           (runtime.floor.version, runtime.floor.source), runtime.root, slots,
                                           os.getpid(), runtime.project.root)) as pool:
            futures: dict[Future, list[Task]] = {pool.submit(_check_chunk, chunk): chunk for chunk in work}
            if started is not None:
                started()  # only now: no thread may run in this process while workers fork
            try:
                for future in as_completed(futures):
                    for outcome in _chunk_outcomes(runtime, future, futures[future], hashing, BrokenProcessPool):
                        outcomes.append(outcome)
                        done.add(outcome[0])
                    if advance is not None:
                        advance(sum(t[2] for t in futures[future]))
            except BaseException:
                _abandon(pool)
                raise
    except BrokenProcessPool as exc:
        with slots.get_lock():
            suspects = {slots[k + 1] for k in range(0, len(slots), 2) if slots[k] and slots[k + 1] >= 0}
        raise _PoolBroke(str(exc) or type(exc).__name__, suspects) from None


def _chunk_outcomes(runtime: Runtime, future: Future, chunk: list[Task], hashing: bool,
                    broken: type[BaseException]) -> list[Outcome]:
    """A chunk's outcomes; when the worker could not send them (a result it could not pickle, an
    error outside any one file's check), each of its files is checked again in isolation, so the
    failure stays those files' error entries and never ends the run."""
    try:
        return future.result()
    except broken:
        raise
    except Exception:
        return [_check_isolated(runtime, task, hashing) for task in chunk]


def _abandon(pool: Any) -> None:
    """Stop at once (Ctrl-C, an error here): leaving the `with` block would wait for every chunk
    the workers are on. The futures are left to the pool: with its workers killed, its manager
    thread fails every pending one as broken, and on Python 3.11 it raised InvalidStateError
    (printed after "audit: interrupted") on any future this process had cancelled meanwhile."""
    for process in list(getattr(pool, "_processes", {}).values()):
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):
            pass
    pool.shutdown(wait=False)


def _check_isolated(runtime: Runtime, task: Task, hashing: bool) -> Outcome:
    index, source, size, expected = task
    try:
        return (index, *run_isolated(runtime.check_with_digest, source, hashing, expected,
                                     timeout=deadline_for(size)))
    except IsolationFailure as exc:
        return index, FileResult(source.display, errors=[FileError(source.display, exc.kind, exc.message)],
                                 parsed=True), None


def _check_here(runtime: Runtime, tasks: Sequence[Task], hashing: bool, outcomes: list[Outcome],
                advance: Callable[[int], None] | None) -> None:
    for index, source, size, expected in tasks:
        outcomes.append((index, *runtime.check_with_digest(source, hashing, expected)))
        if advance is not None:
            advance(size)
