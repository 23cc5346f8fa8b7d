"""Child processes die with the run that started them.

A run killed with SIGTERM or SIGKILL cannot clean up after itself, and the pool's forkserver and
workers (about 230 MB) would otherwise live on indefinitely. Two mechanisms, because each has a
gap: on Linux the kernel sends SIGKILL to a process whose parent dies (prctl PR_SET_PDEATHSIG),
but a worker whose parent died before it asked (a run killed while its pool starts) would never
be told; so workers also watch the run's pid from a daemon thread and leave when it is gone.
The setting does not survive a fork, so every process that needs it asks for it itself: the
forkserver when it starts (it preloads auditor/_forkserver_init.py), each pool worker in its
initializer, each isolated child (auditor/sandbox/isolate.py) right after the fork."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_WATCH_SECONDS = 1.0


def die_with_parent(expected_parent: int | None = None, run_pid: int | None = None) -> None:
    """Kill this process when its parent dies; exit now if `expected_parent` is no longer the
    parent or the run `run_pid` is already gone. With `run_pid`, also watch that process."""
    parent = os.getppid()
    asked = _pdeathsig()
    if os.getppid() != parent or (expected_parent is not None and parent != expected_parent):
        os._exit(1)  # the parent died before the request took effect
    if run_pid is not None:
        if not alive(run_pid):
            os._exit(1)
        _watch(lambda: alive(run_pid))
    elif not asked:
        _watch(lambda: os.getppid() == parent)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError, ValueError):
        return False


def _watch(still_there) -> None:
    def watch() -> None:
        while still_there():
            time.sleep(_WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="lockin-parent-watch", daemon=True).start()
