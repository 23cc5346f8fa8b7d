"""Bytes from disk to text, with every failure turned into a FileError kind rather than an exception.

- `read_regular_file` opens only regular files (never a FIFO, a device or, unless told, a symbolic
  link) and never reads more than the size limit, so a hostile tree cannot hang or flood a run.
- `decode_python` / `decode_text` decode as the interpreter would (BOM, PEP 263 cookie on line 1
  or 2 as the tokenizer reads them) and `text_problem` is the cheap version for files the
  prefilter rules out.
- `split_lines` / `line_starts` are the one definition of a line every module uses: Python's
  (`\\n`, `\\r\\n` and a lone `\\r` end a line), never `str.splitlines()`, which also splits on
  form feeds, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029 and would move snippets and suppressions.

Whether libcst may parse a decoded source at all is auditor/sandbox/parse_guard.py's business."""

from __future__ import annotations

import errno
import io
import operator
import os
import re
import stat
import tokenize
from itertools import accumulate, count

_LINE_END = re.compile(r"\r\n?|\n")


class SourceError(Exception):
    """A file that cannot be turned into text; `kind` goes into the error entry."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# -- lines -----------------------------------------------------------------------------------------
def split_lines(text: str) -> list[str]:
    """The lines of `text` without their ends, as `str.splitlines()` would give them if only
    `\\n`, `\\r\\n` and `\\r` ended a line (no empty last line after a final line end)."""
    lines = text.split("\n") if "\r" not in text else _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def lines_with_ends(text: str) -> list[str]:
    """The lines of `text` with their ends (as `str.splitlines(keepends=True)` with only `\\n`,
    `\\r\\n` and `\\r` ending a line): joined, they give `text` back."""
    starts = line_starts(text)
    if starts[-1] == len(text):
        starts.pop()
    return [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)], strict=False)]


def line_starts(text: str) -> list[int]:
    """Offsets at which each line starts (the first is 0), with the same line ends as `split_lines`."""
    if "\r" in text:
        return [0, *(m.end() for m in _LINE_END.finditer(text))]
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts


# -- reading ---------------------------------------------------------------------------------------
_O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def read_regular_file(path: str, max_bytes: int, follow_symlinks: bool = False) -> bytes:
    """At most `max_bytes` of a regular file; raises SourceError (kind read, symlink-loop or too-large).

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; fstat after
    the open checks what was actually opened, so a file swapped for a device in between is seen."""
    flags = _O_FLAGS | (0 if follow_symlinks else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            if follow_symlinks or not os.path.islink(path):
                raise SourceError("symlink-loop", "symbolic link loop; not followed") from None
            raise SourceError("read", "is a symbolic link; not followed") from None
        raise SourceError("read", f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _SPECIAL if test(info.st_mode)), "not a regular file")
            raise SourceError("read", f"{what}, not a regular file; not read")
        if info.st_size > max_bytes:
            raise SourceError("too-large", _too_large(info.st_size, max_bytes))
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # it grew since the fstat
            raise SourceError("too-large", _too_large(len(data), max_bytes))
        return data
    except OSError as exc:
        raise SourceError("read", f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _too_large(size: int, max_bytes: int) -> str:
    return f"file is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit; not scanned"


# -- decoding --------------------------------------------------------------------------------------
def _check_binary(data: bytes) -> None:
    # No text encoding audit reads puts a NUL byte in source; CPython and libcst reject it too.
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SourceError("decode", "UTF-16 text (byte order mark); source must be UTF-8 or ASCII-compatible")
    if b"\x00" in data:
        raise SourceError("binary", "binary file (contains NUL bytes); not scanned")


def _decode(data: bytes, encoding: str) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = len(split_lines(data[:exc.start].decode("latin-1") + "x"))
        raise SourceError("decode", f"cannot decode as {encoding} (line {line}): {exc.reason}") from None
    except LookupError:
        raise SourceError("decode", f"unknown encoding {encoding!r}") from None
    except (UnicodeError, ValueError) as exc:  # a codec that fails its own way (`# coding: punycode`: D21)
        raise SourceError("decode", f"cannot decode as {encoding}: {exc}") from None
    if not text.isascii() and _SURROGATE.search(text):  # `unicode_escape` can make one; no parser reads it
        raise SourceError("decode", f"decoding as {encoding} gives a lone surrogate, which no Python source holds")
    return text[1:] if text.startswith("\ufeff") else text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _first_two_lines(data: bytes) -> bytes:
    """Lines 1 and 2 as the tokenizer sees them (a lone CR ends a line), each ending in \\n."""
    head = data[:4096]
    if b"\r" not in head:
        return head
    lines = re.split(rb"\r\n?|\n", head, maxsplit=2)[:2]
    return b"".join(line + b"\n" for line in lines)


def python_encoding(data: bytes) -> str:
    """The encoding CPython reads this source with: a BOM, else a PEP 263 cookie on line 1 or 2,
    else UTF-8. Raises SourceError for a bad cookie."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(_first_two_lines(data)).readline)
    except SyntaxError as exc:
        raise SourceError("decode", f"bad encoding declaration: {exc.msg}") from None
    return "utf-8" if encoding == "utf-8-sig" else encoding


def decode_python(data: bytes) -> str:
    """Decode Python source as the interpreter would (BOM, then a PEP 263 coding cookie, else UTF-8)."""
    _check_binary(data)
    return _decode(data, python_encoding(data))


def decode_text(data: bytes) -> str:
    """Decode a UTF-8 text file (requirements, TOML, setup.cfg, CUDA sources)."""
    _check_binary(data)
    return _decode(data, "utf-8")


def text_problem(data: bytes, python: bool) -> SourceError | None:
    """What decoding would say about a file the prefilter ruled out (None: it decodes). Pure-ASCII
    files, nearly all of them, cost one scan."""
    if data.isascii() and b"\x00" not in data:
        if not python or b"coding" not in data[:4096]:
            return None
    try:
        decode_python(data) if python else decode_text(data)
    except SourceError as exc:
        return exc
    return None


# CPython refuses more than 200 nested brackets; below that libcst parses quickly.
MAX_BRACKET_DEPTH = 200
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"()[]{}")
_BRACKET_SIGN = bytes.maketrans(b"([{)]}", b"\x02\x02\x02\x00\x00\x00")


def brackets_too_deep(data: bytes, limit: int = MAX_BRACKET_DEPTH) -> bool:
    """Whether brackets nest deeper than `limit`, counting those in strings and comments too
    (an upper bound of the real nesting, computed at C speed)."""
    marks = data.translate(None, _NOT_BRACKETS)
    if marks.count(b"(") + marks.count(b"[") + marks.count(b"{") <= limit:
        return False
    # After k brackets the depth is opened - closed = 2 * opened - k.
    return max(map(operator.sub, accumulate(marks.translate(_BRACKET_SIGN)), count(1))) > limit
