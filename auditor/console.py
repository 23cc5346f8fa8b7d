"""The two things every part of the command line does with the terminal: one line on stderr, and a
stdout that cannot be written any more. Shared by auditor.cli and auditor.run (which must not
import each other both ways)."""

from __future__ import annotations

import os
import sys


def stderr_line(line: str) -> None:
    """One line on stderr; nothing when stderr is closed (print(file=None) would write to stdout
    and corrupt a JSON report)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(line, file=stream)
    except (OSError, ValueError):
        pass


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
