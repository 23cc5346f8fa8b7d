"""Running libcst and the walk on a thread with a large stack and a high recursion limit.

libcst's native parser recurses once per level of nesting: `a and a and ...` with 7,500 terms
(valid Python) overflows the 8 MB main-thread stack and the process dies with a segmentation fault.
The walker, the position pass and libcst's code generation recurse in Python, two or three frames
per level, so 500 adjacent strings or 600 `elif` branches hit the default recursion limit of 1,000.
One long-lived thread per process with a 256 MB stack (address space reserved, not memory used)
and a recursion limit of 200,000 runs every parse and walk instead; handing a file to it costs
about 60 microseconds. The thread is a daemon and is recreated after a fork, so an interrupted run
exits at once and a forked worker never waits on its parent's thread."""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

STACK_BYTES = 256 * 1024 * 1024
RECURSION_LIMIT = 200_000

T = TypeVar("T")
_lock = threading.Lock()
_runner: _Runner | None = None


class _Runner:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        previous = threading.stack_size()
        threading.stack_size(STACK_BYTES)
        try:
            self.thread = threading.Thread(target=self._serve, name="lockin-deep", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def _serve(self) -> None:
        while True:
            function, args, box, done = self.tasks.get()
            try:
                box.append((True, function(*args)))
            except BaseException as exc:  # handed back to the caller, re-raised there
                box.append((False, exc))
            done.set()

    def run(self, function: Callable[..., T], args: tuple) -> T:
        done = threading.Event()
        box: list[tuple[bool, Any]] = []
        self.tasks.put((function, args, box, done))
        done.wait()
        ok, value = box[0]
        if ok:
            return value
        raise value


def _get_runner() -> _Runner | None:
    global _runner
    runner = _runner
    if runner is not None and runner.pid == os.getpid():
        return runner
    with _lock:
        if _runner is None or _runner.pid != os.getpid():
            try:
                _runner = _Runner()
            except (RuntimeError, ValueError, MemoryError):  # no threads or no such stack here
                return None
        return _runner


def _with_limit(function: Callable[..., T], *args: Any) -> T:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        return function(*args)
    finally:
        sys.setrecursionlimit(previous)


def run_deep(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on the large-stack thread (in place when already on it, or when no such
    thread can be made); exceptions propagate to the caller."""
    if threading.current_thread().name == "lockin-deep":
        return function(*args)
    runner = _get_runner()
    if runner is None:
        return function(*args)
    return runner.run(_with_limit, (function, *args))
