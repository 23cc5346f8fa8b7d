"""`python -m auditor`: the `audit` command.

Python puts the working directory first on sys.path for `-m`; inside a scanned (untrusted)
checkout that would let a repository's `typer.py` or `rich/` shadow the real ones, or its
`*.dist-info` register plugins. It is taken off before anything else is imported. What cannot be
helped from here: Python imports the `auditor` package itself before this file runs, so a
checkout with its own `auditor/` would still win. Inside an untrusted checkout run the `audit`
command, or `python -I -m auditor` (see the README's Security section)."""

import os
import sys


def _trusted_path() -> list[str]:
    cwd = os.path.realpath(os.getcwd())
    return [entry for entry in sys.path
            if entry and os.path.isabs(entry) and os.path.realpath(entry) != cwd]


sys.path[:] = _trusted_path()

from auditor.cli import entry_point  # noqa: E402  (after the path is made safe)

entry_point()
