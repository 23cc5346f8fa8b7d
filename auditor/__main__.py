"""`python -m auditor`: the `audit` command.

Python puts the working directory first on sys.path for `-m`; inside a scanned (untrusted)
checkout that would let a repository's `typer.py` or `rich/` shadow the real ones, or its
`*.dist-info` register plugins. It is taken off before anything else is imported. What cannot be
helped from here: Python imports `importlib` and the `auditor` package itself before this file
runs, so a checkout with its own `importlib/` or `auditor/` would still win. Inside an untrusted
checkout run the `audit` command, or `python -I -m auditor` (see the README's Security section).
The interpreters this process starts are isolated whatever the cwd (auditor/sandbox/interpreter.py)."""

import os
import sys


def _trusted_path() -> list[str]:
    """auditor.sandbox.interpreter.trusted_path, repeated here: importing that module would import
    `__future__`, `contextlib` and `typing`, which are not loaded yet and would come from the
    working directory. Only `os` and `sys` (loaded at start-up) are used before the path is safe."""
    cwd = os.path.realpath(os.getcwd())
    own = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    kept = []
    for entry in sys.path:
        if entry and os.path.isabs(entry):
            real = os.path.realpath(entry)
            if real != cwd or real == own:
                kept.append(entry)
    return kept


sys.path[:] = _trusted_path()

from auditor.cli import entry_point  # noqa: E402  (after the path is made safe)

entry_point()
