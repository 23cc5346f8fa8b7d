"""Every Python interpreter this process starts runs isolated from the working directory.

CI runs `audit` with the scanned, untrusted checkout as the working directory, and CPython puts
the working directory first on sys.path for `-c` and `-m` (relative PYTHONPATH entries resolve
against it too). The pool's forkserver and resource tracker are such interpreters
(`python -c "from multiprocessing.forkserver import main; ..."`): a checkout's `multiprocessing/`
or `libcst/` was imported and ran in them. So:

- every interpreter multiprocessing starts gets `-I` (isolated mode: neither the working
  directory nor the script's folder on sys.path, no PYTHON* variables, no user site-packages),
  whatever flags this process itself was started with (`isolate_child_interpreters`);
- the sys.path the forkserver then adopts from this process is `trusted_path()`: absolute entries
  only, never the working directory (unless it is where this auditor's own code comes from);
- this process drops the same entries at start-up (`make_path_safe`, from both entry points), so
  what it imports later, and what forked children (auditor/isolate.py, the `fork` start method)
  import after the fork, comes from trusted folders too.

multiprocessing offers no option for the flags it starts interpreters with: both the forkserver
and the resource tracker take them from `multiprocessing.util._args_from_interpreter_flags`,
which is wrapped here (checked by tests/test_untrusted_children.py on every run of the suite)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import multiprocessing.context

ISOLATED = "-I"
# Flags -I implies: passing them too would only repeat it.
_IMPLIED = frozenset({"-I", "-E", "-s", "-P"})


def _own_folder() -> str:
    """The folder this auditor's package is imported from: its code already runs here."""
    import auditor  # the package itself (loaded: this module is inside it)

    return os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(auditor.__file__))))


def trusted_path(path: list[str] | None = None, cwd: str | None = None) -> list[str]:
    """`path` (default sys.path) without what the working directory controls: "" and relative
    entries resolve against it, and the directory itself may be the checkout being scanned."""
    here = os.path.realpath(cwd if cwd is not None else os.getcwd())
    own = _own_folder()
    kept = []
    for entry in sys.path if path is None else path:
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real != here or real == own:
            kept.append(entry)
    return kept


def make_path_safe() -> None:
    """Drop the working directory's entries from this process's sys.path (at start-up)."""
    sys.path[:] = trusted_path()


@contextmanager
def safe_sys_path() -> Iterator[None]:
    """sys.path is trusted_path() inside the block (what a child started here copies)."""
    saved = sys.path[:]
    sys.path[:] = trusted_path(saved)
    try:
        yield
    finally:
        sys.path[:] = saved


def isolated_flags(flags: list[str]) -> list[str]:
    """Interpreter flags for a child: this process's, with isolated mode."""
    return [flag for flag in flags if flag not in _IMPLIED] + [ISOLATED]


def isolate_child_interpreters() -> None:
    """Make every interpreter multiprocessing starts from now on (forkserver, resource tracker,
    spawned workers) start with -I. Idempotent."""
    from multiprocessing import util

    current: Callable[[], list[str]] = util._args_from_interpreter_flags
    if getattr(current, "_lockin_isolated", False):
        return

    def flags() -> list[str]:
        return isolated_flags(current())

    flags._lockin_isolated = True  # type: ignore[attr-defined]
    util._args_from_interpreter_flags = flags


def forkserver_context(preload: list[str]) -> multiprocessing.context.BaseContext:
    """The forkserver start method, its server (and the resource tracker) started isolated now,
    with a trusted sys.path, and preloading `preload`."""
    import multiprocessing
    import multiprocessing.forkserver

    isolate_child_interpreters()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    with safe_sys_path():  # the server adopts this process's sys.path when it starts
        multiprocessing.forkserver.ensure_running()
    return context


def context_for(method: str) -> multiprocessing.context.BaseContext:
    """Any other start method; `spawn` starts interpreters too, so they are isolated as well."""
    import multiprocessing

    isolate_child_interpreters()
    return multiprocessing.get_context(method)
