"""Bytes to text, with every failure turned into a FileError kind rather than an exception."""

from __future__ import annotations

import io
import tokenize

DEFAULT_MAX_BYTES = 10 * 1024 * 1024


class SourceError(Exception):
    """A file that cannot be turned into text; `kind` goes into the error entry."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _check_binary(data: bytes) -> None:
    if b"\x00" in data[:8192]:
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
    """Decode Python source as the interpreter would: BOM, then a PEP 263 coding cookie, else UTF-8."""
    _check_binary(data)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError("decode", f"bad encoding declaration: {exc}") from None
    return _decode(data, "utf-8" if encoding == "utf-8-sig" else encoding)


def decode_text(data: bytes) -> str:
    """Decode a UTF-8 text file (requirements, TOML, setup.cfg, CUDA sources)."""
    _check_binary(data)
    return _decode(data, "utf-8")
