"""Running one risky piece of work in a forked child with a memory limit and a deadline.

Used where nothing cheaper can vouch for an input: a file CPython cannot parse (newer grammar or
broken) that the guard would otherwise have checked (auditor/sandbox/parse_guard.py), and the files a pool
worker was checking when it died (auditor/pipeline/parallel.py). The child inherits everything it needs
through fork, limits its address space (RLIMIT_AS) so a blow-up fails in the child instead of
exhausting the machine, dies with its parent, and sends its result back pickled. A crash, the
memory limit or the deadline becomes a message for an error entry; the caller's process is never
at risk. Without fork (Windows) the work runs in place."""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Any

from auditor.sandbox.deep import STACK_BYTES, run_deep
from auditor.sandbox.lifetime import die_with_parent

MEMORY_BYTES = 1024 * 1024 * 1024  # on top of what the process already maps
BASE_SECONDS = 60.0
SECONDS_PER_BYTE = 1 / 10_000  # libcst parses 30-500 kB/s; a tenth of the slowest, plus the base


class IsolationFailure(Exception):
    """The child crashed, ran out of memory or time; `kind` and `message` go into an error entry."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def deadline_for(size: int) -> float:
    return BASE_SECONDS + size * SECONDS_PER_BYTE


def run_isolated(function: Callable[..., Any], *args: Any, timeout: float,
                 memory_bytes: int = MEMORY_BYTES) -> Any:
    """`function(*args)` (on the large-stack thread) in a forked child; its result, or
    IsolationFailure. Exceptions the function raises come back as IsolationFailure too."""
    if not hasattr(os, "fork") or not hasattr(select, "poll"):
        return run_deep(function, *args)
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(write_end, parent, memory_bytes, function, args)
    os.close(write_end)
    try:
        payload, timed_out = _collect(read_end, pid, timeout)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        raise IsolationFailure("timeout", f"checking took over {timeout:.0f} s; stopped, not scanned")
    if payload:
        try:
            ok, value = pickle.loads(payload)
        except Exception:  # a child cut short mid-write
            ok, value = False, ("crash", "the checking process sent a truncated result; not scanned")
        if ok:
            return value
        raise IsolationFailure(*value)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        raise IsolationFailure("crash", f"the parser crashed on this file ({name}); not scanned")
    raise IsolationFailure("crash", f"the checking process exited with status {os.waitstatus_to_exitcode(status)} "
                                    "without a result; not scanned")


def _collect(fd: int, pid: int, timeout: float) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    poller = select.poll()  # not select(): descriptors above 1023 are fine
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            _kill(pid)
            return b"", True
        if not poller.poll(max(1, int(left * 1000))):
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _child(fd: int, parent: int, memory_bytes: int, function: Callable[..., Any], args: tuple) -> None:
    code = 0
    try:
        die_with_parent(parent)
        _quiet()
        limit_memory(memory_bytes)
        try:
            result: tuple[bool, Any] = (True, run_deep(function, *args))
        except MemoryError:
            result = (False, ("crash", f"needs more than {memory_bytes // 2**20} MB of memory to check; not scanned"))
        except RecursionError:
            result = (False, ("parse", "too deeply nested to check"))
        except Exception as exc:
            result = (False, ("internal", f"internal error while checking this file: {type(exc).__name__}: {exc}"))
        payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _quiet() -> None:
    """The child reports through its pipe only: a native crash's or panic's message (or the
    inherited faulthandler's dump) would land in the user's terminal or the JSON report."""
    try:
        import faulthandler

        faulthandler.disable()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass


def limit_memory(memory_bytes: int) -> None:
    """RLIMIT_AS at what the process maps now, plus a stack for the large-stack thread, plus
    `memory_bytes`: an allocation beyond fails (MemoryError, or an abort in native code)."""
    try:
        import resource

        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = mapped + STACK_BYTES + memory_bytes
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no RLIMIT_AS: the deadline still applies
