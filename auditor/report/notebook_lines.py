"""Where a notebook finding stands in the `.ipynb` file itself, for the formats that show a file's
own lines (SARIF, GitLab, rdjson): a finding carries its cell and the line and column in that
cell; the file's line is the line of the JSON string holding that source line (Jupyter writes one
string per source line), and the column is where its text starts inside that string literal.

The notebook is read again (a regular file, never through a link, no larger than the run's
limit) and scanned for the positions of each cell's `source` strings; a notebook that changed or
cannot be read gives None, and the caller names the cell instead."""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from json.decoder import scanstring

from auditor.model import Finding
from auditor.read.text import SourceError, line_starts, lines_with_ends, read_regular_file
from auditor.report.model import Report

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")


@dataclass(frozen=True)
class FileRegion:
    """1-based line and column in the `.ipynb` text (code points), end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class _Malformed(ValueError):
    pass


def _ws(text: str, at: int) -> int:
    return _WS.match(text, at).end()  # type: ignore[union-attr]  # matches the empty string


def _expect(text: str, at: int, char: str) -> None:
    if text[at:at + 1] != char:
        raise _Malformed(f"{char!r} expected at {at}")


def _members(text: str, at: int, value) -> int:
    """Walk the object at `at`, calling `value(key, offset)` for each member; the end offset."""
    _expect(text, at, "{")
    at = _ws(text, at + 1)
    if text[at:at + 1] == "}":
        return at + 1
    while True:
        _expect(text, at, '"')
        key, at = scanstring(text, at + 1)
        at = _ws(text, at)
        _expect(text, at, ":")
        at = _ws(text, value(key, _ws(text, at + 1)))
        if text[at:at + 1] == ",":
            at = _ws(text, at + 1)
            continue
        _expect(text, at, "}")
        return at + 1


def _elements(text: str, at: int, value) -> int:
    _expect(text, at, "[")
    at = _ws(text, at + 1)
    if text[at:at + 1] == "]":
        return at + 1
    index = 0
    while True:
        at = _ws(text, value(index, at))
        index += 1
        if text[at:at + 1] == ",":
            at = _ws(text, at + 1)
            continue
        _expect(text, at, "]")
        return at + 1


def _skip(text: str, at: int) -> int:
    return _DECODER.raw_decode(text, at)[1]


def source_strings(text: str) -> list[list[int]]:
    """Per cell (in order), the offsets of the opening quotes of its `source` strings (one
    offset when the source is a single string). Raises ValueError on text that is not a notebook."""
    cells: list[list[int]] = []

    def cell(_index: int, at: int) -> int:
        strings: list[int] = []
        cells.append(strings)
        if text[at:at + 1] != "{":
            return _skip(text, at)

        def member(key: str, at: int) -> int:
            if key != "source":
                return _skip(text, at)
            strings.clear()  # a repeated key: json.loads keeps the last
            if text[at:at + 1] == '"':
                strings.append(at)
                return _skip(text, at)
            if text[at:at + 1] != "[":
                return _skip(text, at)

            def part(_index: int, at: int) -> int:
                strings.append(at)
                return _skip(text, at)
            return _elements(text, at, part)
        return _members(text, at, member)

    def top(key: str, at: int) -> int:
        if key == "cells" and text[at:at + 1] == "[":
            cells.clear()
            return _elements(text, at, cell)
        return _skip(text, at)

    _members(text, _ws(text, 0), top)
    return cells


def _raw_offsets(text: str, quote: int) -> tuple[str, list[int]]:
    """The decoded string literal at `quote` and, for each decoded code point (and one past the
    end), its offset in `text`."""
    value, end = scanstring(text, quote + 1)
    offsets: list[int] = []
    at = quote + 1
    while at < end - 1:
        match = _ESCAPE.match(text, at) if text[at] == "\\" else None
        if match is None:
            offsets.append(at)
            at += 1
            continue
        offsets.append(at)
        at = match.end()
        high = match.group(1)
        if high and 0xD800 <= int(high, 16) < 0xDC00:  # a surrogate pair decodes to one code point
            low = _ESCAPE.match(text, at)
            if low and low.group(1) and 0xDC00 <= int(low.group(1), 16) < 0xE000:
                at = low.end()
    offsets.append(end - 1)
    if len(offsets) != len(value) + 1:
        raise _Malformed("escapes not understood")
    return value, offsets


class NotebookPlaces:
    """Maps (cell, line, column) to the notebook file's own lines, per notebook of one report."""

    def __init__(self, report: Report) -> None:
        self._paths = {s.display: s.path for s in report.result.files if s.kind == "notebook"}
        self._max_bytes = report.settings.max_bytes
        self._cache: dict[str, tuple[str, list[int], list[list[int]]] | None] = {}

    @classmethod
    def of_text(cls, path: str, text: str) -> NotebookPlaces:
        """The places of one notebook whose text is in memory (an editor's open document)."""
        places = cls.__new__(cls)
        places._paths, places._max_bytes = {}, 0
        try:
            places._cache = {path: (text, line_starts(text), source_strings(text))}
        except (ValueError, IndexError, RecursionError):
            places._cache = {path: None}
        return places

    def _read(self, path: str) -> tuple[str, list[int], list[list[int]]] | None:
        if path not in self._cache:
            self._cache[path] = None
            source = self._paths.get(path)
            if source is not None:
                try:
                    text = read_regular_file(source, self._max_bytes).decode("utf-8-sig")
                    self._cache[path] = (text, line_starts(text), source_strings(text))
                except (SourceError, ValueError, IndexError, RecursionError):
                    pass
        return self._cache[path]

    def region(self, finding: Finding) -> FileRegion | None:
        """The finding's span in the file, or None (not a notebook finding, or not found)."""
        if finding.cell is None:
            return None
        read = self._read(finding.path)
        if read is None:
            return None
        text, starts, cells = read
        if not 0 < finding.cell <= len(cells):
            return None
        try:
            start = self._place(text, starts, cells[finding.cell - 1], finding.line, finding.column)
            end = self._place(text, starts, cells[finding.cell - 1], finding.end_line, finding.end_column)
        except (ValueError, IndexError):
            return None
        if start is None:
            return None
        if end is None or end < start:
            end = (start[0], start[1] + 1)
        return FileRegion(start[0], start[1], end[0], end[1])

    def _place(self, text: str, starts: list[int], strings: list[int], line: int,
               column: int) -> tuple[int, int] | None:
        """(file line, file column) of a cell's (line, column), both 1-based."""
        pieces, line_offsets = self._cell(text, tuple(strings))
        if not 0 < line <= len(line_offsets):
            return None
        wanted = line_offsets[line - 1] + column - 1
        seen = 0
        for value, offsets in pieces:
            # a position at a piece's end belongs to the next piece, unless the line goes on there
            if wanted < seen + len(value) or (wanted == seen + len(value) and not value.endswith(("\n", "\r"))):
                offset = offsets[wanted - seen]
                file_line = _line_of(starts, offset)
                return file_line, offset - starts[file_line - 1] + 1
            seen += len(value)
        return None

    @staticmethod
    @lru_cache(maxsize=256)
    def _cell(text: str, strings: tuple[int, ...]) -> tuple[list[tuple[str, list[int]]], list[int]]:
        """A cell's source pieces (decoded value, raw offsets) and where each of its lines starts."""
        pieces = [_raw_offsets(text, quote) for quote in strings]
        source = "".join(value for value, _ in pieces)
        line_offsets, at = [], 0
        for line in lines_with_ends(source) or [""]:
            line_offsets.append(at)
            at += len(line)
        return pieces, line_offsets


def _line_of(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)
