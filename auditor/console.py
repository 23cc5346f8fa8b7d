"""What every part of the command line does with the terminal: one line on stderr, a stdout that
cannot be written any more, and text from a scanned repository made printable. Shared by
auditor.cli, auditor.run (which must not import each other both ways) and the reporters."""

from __future__ import annotations

import os
import sys


def printable(text: str) -> str:
    """`text` with every character that is not printable (str.isprintable: C0 and C1 controls,
    ESC and BEL among them, line and paragraph separators, bidi and other format characters),
    but the tab, written as an escape (`\\x1b`, `\\u2028`). A file name or a line of a scanned
    repository then cannot start a GitHub workflow command on a line of its own, move a
    terminal's cursor or reorder what a reader sees (issue 20, D14 and D28)."""
    if text.isprintable():  # one C scan: nearly every text
        return text
    return "".join(c if c.isprintable() or c == "\t" else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def stderr_line(line: str) -> None:
    """One line on stderr (made printable: it may name a file of the repository); nothing when
    stderr is closed (print(file=None) would write to stdout and corrupt a JSON report)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(printable(line), file=stream)
    except (OSError, ValueError):
        pass


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
