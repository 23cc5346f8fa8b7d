"""Positions for values read by a parser that keeps none (tomllib): find the table header, then the
key, then the quoted value in the text, falling back to the closest of those.

Everything here runs in time linear in the text, whatever it holds (a scanned repository is
untrusted): headers and keys are found by one pass over the lines with plain string methods, each
table's keys and string literals are indexed once, and a value is looked up in that index from a
cursor instead of searched for from the start of its table (20,000 identical entries used to cost
32 s and 200,000 dependencies 108 s; a `[` followed by 5,000 blanks inside a multi-line string,
42 s of regex backtracking)."""

from __future__ import annotations

import bisect
import tomllib
from typing import TYPE_CHECKING, Any

from auditor.read import toml_guard
from auditor.read.text import line_starts
from auditor.readers import Located

if TYPE_CHECKING:
    from auditor.context import FileContext


def load_toml(ctx: FileContext) -> dict[str, Any] | None:
    """The file's TOML data, or None after a `parse` error entry (bad TOML, or nested deeper than
    tomllib, which recurses once per nested array or inline table, can read)."""
    try:
        return toml_guard.loads(ctx.text)
    except tomllib.TOMLDecodeError as exc:
        ctx.error("parse", f"invalid TOML: {exc}")
    except RecursionError:
        ctx.error("parse", "invalid TOML: nested too deeply to read")
    return None


def split_key(dotted: str) -> tuple[str, ...]:
    """`tool.poetry.group."dev".dependencies` -> ("tool", "poetry", "group", "dev", "dependencies")."""
    return tuple(name for name, _, _ in key_parts(dotted))


def key_parts(dotted: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of each part of a dotted TOML key; start and end span the quotes."""
    parts: list[tuple[str, int, int]] = []
    at, size = 0, len(dotted)
    while at < size:
        char = dotted[at]
        if char in " \t.":
            at += 1
            continue
        if char == '"':
            end = at + 1
            while end < size and dotted[end] != '"':
                end += 2 if dotted[end] == "\\" else 1
            end = min(end, size - 1) + 1
            parts.append((dotted[at + 1:end - 1], at, end))
        elif char == "'":
            close = dotted.find("'", at + 1)
            end = size if close < 0 else close + 1
            parts.append((dotted[at + 1:end - 1], at, end))
        else:
            end = at
            while end < size and dotted[end] not in " \t.\"'":
                end += 1
            parts.append((dotted[at:end], at, end))
        at = end
    return parts


def _header(line: str) -> tuple[int, str] | None:
    """(offset of the bracket, table name) when `line` is a `[table]` or `[[array]]` header."""
    body = line.lstrip(" \t")
    if not body.startswith("["):
        return None
    offset = len(line) - len(body)
    inner = body[2:] if body.startswith("[[") else body[1:]
    close = inner.find("]")
    if close < 0:
        return None
    name = inner[:close]
    if "[" in name or not name.strip(" \t"):
        return None
    rest = inner[close + 1:]
    rest = rest[1:] if rest.startswith("]") else rest
    rest = rest.lstrip(" \t\r")
    if rest and rest[0] not in "#;":
        return None
    return offset, name.strip(" \t")


class Locator:
    """Maps (table, key, value) to a span in a TOML text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)
        self.headers: list[tuple[int, int, tuple[str, ...]]] = []  # (header start, body start, path)
        self.tables: dict[tuple[str, ...], list[int]] = {}  # path -> indexes into headers
        offset = 0
        for line in text.split("\n"):  # a TOML line ends with LF or CRLF
            found = _header(line)
            if found is not None:
                path = split_key(found[1])
                self.tables.setdefault(path, []).append(len(self.headers))
                self.headers.append((offset + found[0], offset + len(line), path))
            offset += len(line) + 1
        self.used: set[int] = set()
        self._keys: dict[tuple[int, int], dict[str, list[tuple[int, int]]]] = {}
        self._strings: dict[tuple[str, str], list[tuple[int, int]]] | None = None  # (text, quote) -> spans
        self._cursor: dict[tuple, int] = {}

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1

    def span(self, start: int, end: int) -> Located:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Located(line=line, column=column, end_line=end_line, end_column=end_column)

    def section(self, path: tuple[str, ...], nth: int = 0) -> tuple[int, int, int] | None:
        """(header start, body start, body end) of the nth table with this path."""
        found = self.tables.get(path, ())
        if len(found) <= nth:
            return None
        i = found[nth]
        end = self.headers[i + 1][0] if i + 1 < len(self.headers) else len(self.text)
        return self.headers[i][0], self.headers[i][1], end

    def locate(self, path: tuple[str, ...], key: str | None = None, value: str | None = None,
               nth: int = 0) -> Located:
        """The value if found, else the key, else the table header, else line 1."""
        region = self.section(path, nth)
        prefix = path
        while region is None and len(prefix) > 1:  # written as dotted keys / inline tables in a parent
            prefix = prefix[:-1]
            region = self.section(prefix)
        header, start, end = region if region is not None else (0, 0, len(self.text))
        key_span = self._key(key, start, end) if key else None
        if value:
            found = self._value(value, key_span[0] if key_span else start, end)
            if found is None and key_span is None:
                found = self._value(value, 0, len(self.text))
            if found is not None:
                return self.span(*found)
        if key_span is not None:
            return self.span(*key_span)
        if region is not None:
            line_end = self.text.find("\n", header)
            return self.span(header, line_end if line_end >= 0 else len(self.text))
        return Located()

    def _key(self, key: str, start: int, end: int) -> tuple[int, int] | None:
        """The first `key =` (or `a.b.key =`, quoted or not) at the start of a line in the region."""
        index = self._keys.get((start, end))
        if index is None:
            index = self._keys[(start, end)] = self._index_keys(start, end)
        spans = index.get(key)
        return spans[0] if spans else None

    def _index_keys(self, start: int, end: int) -> dict[str, list[tuple[int, int]]]:
        index: dict[str, list[tuple[int, int]]] = {}
        text = self.text
        at = text.rfind("\n", 0, start) + 1
        while at < end:
            line_end = text.find("\n", at, end)
            line_end = end if line_end < 0 else line_end
            found = self._line_key(at, line_end)
            if found is not None:
                index.setdefault(found[0], []).append(found[1:])
            at = line_end + 1
        return index

    def _line_key(self, at: int, end: int) -> tuple[str, int, int] | None:
        """(last part, start, end) of the dotted key a `key = value` line starts with."""
        text = self.text
        delimiters = "="
        while at < end and text[at] in " \t":
            at += 1
        last = None
        while at < end:
            char = text[at]
            if char == '"':
                close = at + 1
                while close < end and text[close] != '"':
                    close += 2 if text[close] == "\\" else 1
                if close >= end:
                    return None
                last, after = (text[at + 1:close], at, close + 1), close + 1
            elif char == "'":
                close = text.find("'", at + 1, end)
                if close < 0:
                    return None
                last, after = (text[at + 1:close], at, close + 1), close + 1
            else:
                after = at
                while after < end and (text[after].isalnum() or text[after] in "_-"):
                    after += 1
                if after == at:
                    return None
                last = (text[at:after], at, after)
            while after < end and text[after] in " \t":
                after += 1
            if after < end and text[after] in delimiters:
                return last
            if after >= end or text[after] != ".":
                return None
            at = after + 1
            while at < end and text[at] in " \t":
                at += 1
        return None

    def _value(self, value: str, start: int, end: int) -> tuple[int, int] | None:
        """The first unused string literal in [start, end) whose text is `value` (as written, or
        with `"` and `\\` escaped in a basic string)."""
        if self._strings is None:
            self._strings = {}
            for content, quote, at, stop in _string_literals(self.text, 0, len(self.text)):
                self._strings.setdefault((content, quote), []).append((at, stop))
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        for variant in ((value, '"'), (value, "'"), (escaped, '"')):
            spans = self._strings.get(variant)
            if not spans:
                continue
            key = (variant, start)
            i = self._cursor.get(key)
            if i is None:
                i = bisect.bisect_left(spans, (start, -1))
            while i < len(spans) and spans[i][0] < end and spans[i][0] in self.used:
                i += 1
            self._cursor[key] = i  # spans before i are used for good: the next search starts here
            if i < len(spans) and spans[i][0] < end:
                self.used.add(spans[i][0])
                return spans[i]
        return None


def _string_literals(text: str, start: int, end: int):
    """(content, quote, start, end) of each one-line TOML string in [start, end), in order, in
    one pass: comments and multi-line strings are skipped, an unterminated string ends its line."""
    at = start
    find = text.find
    while True:
        quote_at = min((p for p in (find('"', at, end), find("'", at, end), find("#", at, end)) if p >= 0),
                       default=-1)
        if quote_at < 0:
            return
        char = text[quote_at]
        line_end = find("\n", quote_at, end)
        line_end = end if line_end < 0 else line_end
        if char == "#":
            at = line_end
            continue
        if text.startswith(char * 3, quote_at):
            close = find(char * 3, quote_at + 3, end)
            at = end if close < 0 else close + 3
            continue
        if char == "'":
            close = find("'", quote_at + 1, line_end)
        else:
            close = quote_at + 1
            while close < line_end and text[close] != '"':
                close += 2 if text[close] == "\\" else 1
            close = close if close < line_end else -1
        if close < 0:
            at = line_end
            continue
        yield text[quote_at + 1:close], char, quote_at, close + 1
        at = close + 1
