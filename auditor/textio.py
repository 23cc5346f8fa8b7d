"""Bytes to text, with every failure turned into a FileError kind rather than an exception.

Python source also passes a nesting guard here: libcst's native parser overflows its stack
(a segmentation fault that kills the whole run) or takes minutes on pathologically nested
code that CPython itself refuses, e.g. two thousand nested brackets. Such files become a
`parse` error entry instead."""

from __future__ import annotations

import ast
import io
import operator
import tokenize
from itertools import accumulate, count

DEFAULT_MAX_BYTES = 10 * 1024 * 1024

# CPython refuses more than 200 nested brackets; below that libcst parses quickly.
MAX_BRACKET_DEPTH = 200
# Long operator chains (`-` * 50000, `a + ... + a` over thousands of lines, `a.b.b.b...`)
# nest as deeply as brackets do, and libcst's time grows with the cube of a `+` chain. Files
# with a very long line, many operators or many bytes get CPython's exact check, which costs
# about a tenth of a libcst parse (under 1% of real files trigger it).
GUARD_LINE_LENGTH = 5_000
GUARD_FILE_SIZE = 500_000
GUARD_OPERATOR_COUNT = 2_000
_CHAIN_BYTES = tuple(bytes([c]) for c in b"+-*/|&^%@.(")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"()[]{}")
_BRACKET_SIGN = bytes.maketrans(b"([{)]}", b"\x02\x02\x02\x00\x00\x00")
_DEPTH_ERRORS = ("too many nested", "too complex", "too many levels of indentation", "parser stack overflow")


class SourceError(Exception):
    """A file that cannot be turned into text; `kind` goes into the error entry."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _check_binary(data: bytes) -> None:
    # No text encoding audit reads puts a NUL byte in source; CPython and libcst reject it too.
    if b"\x00" in data:
        raise SourceError("binary", "binary file (contains NUL bytes); not scanned")


def _decode(data: bytes, encoding: str) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError("decode", f"cannot decode as {encoding} (line {line}): {exc.reason}") from None
    except LookupError:
        raise SourceError("decode", f"unknown encoding {encoding!r}") from None
    return text[1:] if text.startswith("\ufeff") else text


def decode_python(data: bytes) -> str:
    """Decode Python source as the interpreter would (BOM, then a PEP 263 coding cookie, else
    UTF-8) and refuse source nested too deeply to parse safely."""
    _check_binary(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError("decode", f"bad encoding declaration: {exc.msg}") from None
    text = _decode(data, "utf-8" if encoding == "utf-8-sig" else encoding)
    if _may_be_too_deep(data, text):
        _refuse_too_deep(text)
    return text


def decode_text(data: bytes) -> str:
    """Decode a UTF-8 text file (requirements, TOML, setup.cfg, CUDA sources)."""
    _check_binary(data)
    return _decode(data, "utf-8")


def brackets_too_deep(data: bytes, limit: int = MAX_BRACKET_DEPTH) -> bool:
    """Whether brackets nest deeper than `limit`, counting those in strings and comments too
    (an upper bound of the real nesting, computed at C speed)."""
    marks = data.translate(None, _NOT_BRACKETS)
    if marks.count(b"(") + marks.count(b"[") + marks.count(b"{") <= limit:
        return False
    # After k brackets the depth is opened - closed = 2 * opened - k.
    return max(map(operator.sub, accumulate(marks.translate(_BRACKET_SIGN)), count(1))) > limit


def _may_be_too_deep(data: bytes, text: str) -> bool:
    if len(data) > GUARD_FILE_SIZE or brackets_too_deep(data):
        return True
    if max(map(data.count, _CHAIN_BYTES)) > GUARD_OPERATOR_COUNT:
        return True
    return max(map(len, text.split("\n"))) > GUARD_LINE_LENGTH


def _refuse_too_deep(text: str) -> None:
    """Ask CPython's parser, which fails cleanly on deep nesting; other syntax errors are left
    to libcst, which knows newer grammar than the running interpreter may."""
    try:
        compile(text, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        raise SourceError("parse", "nested too deeply to parse safely; not scanned") from None
    except SyntaxError as exc:
        message = str(exc.msg)
        if any(marker in message for marker in _DEPTH_ERRORS):
            raise SourceError("parse", f"nested too deeply to parse safely (line {exc.lineno}: {message}); "
                                       "not scanned") from None
    except (ValueError, TypeError):
        return
