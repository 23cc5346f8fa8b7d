"""Positions for values read by parsers that keep none (tomllib, configparser): find the table
header, then the key, then the quoted value in the text, falling back to the closest of those."""

from __future__ import annotations

import bisect
import re

from auditor.readers import Located

_HEADER = re.compile(r"^[ \t]*(\[\[?)[ \t]*([^\[\]\n]+?)[ \t]*\]\]?[ \t]*(?:[#;].*)?$", re.MULTILINE)
_KEY_PART = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^.\s"']+)\s*""")


def split_key(dotted: str) -> tuple[str, ...]:
    """`tool.poetry.group."dev".dependencies` -> ("tool", "poetry", "group", "dev", "dependencies")."""
    parts = []
    for match in _KEY_PART.finditer(dotted):
        part = match.group(1)
        parts.append(part[1:-1] if part[:1] in "\"'" else part)
    return tuple(parts)


class Locator:
    """Maps (table, key, value) to a span in a TOML or INI text."""

    def __init__(self, text: str, quoted: bool = True) -> None:
        self.text = text
        self.quoted = quoted  # TOML values are quoted strings; INI values are bare
        self.starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.headers = [(m.start(), m.end(), split_key(m.group(2))) for m in _HEADER.finditer(text)]
        self.used: set[int] = set()

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1

    def span(self, start: int, end: int) -> Located:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Located(line=line, column=column, end_line=end_line, end_column=end_column)

    def section(self, path: tuple[str, ...], nth: int = 0) -> tuple[int, int, int] | None:
        """(header start, body start, body end) of the nth table with this path."""
        found = [i for i, (_, _, p) in enumerate(self.headers) if p == path]
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
        escaped = re.escape(key)
        pattern = re.compile(rf"""^[ \t]*(?:[\w.\-"']+\.)?(["']?){escaped}\1[ \t]*[=:]""", re.MULTILINE)
        match = pattern.search(self.text, start, end)
        if match is None:
            return None
        at = match.start(1)
        return at, at + len(key) + 2 * len(match.group(1))

    def _value(self, value: str, start: int, end: int) -> tuple[int, int] | None:
        if not self.quoted:
            return self._bare(value, start, end)
        escaped = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        for variant in (f'"{value}"', f"'{value}'", escaped):
            at = self.text.find(variant, start, end)
            while at >= 0 and at in self.used:
                at = self.text.find(variant, at + 1, end)
            if at >= 0:
                self.used.add(at)
                return at, at + len(variant)
        return None

    def _bare(self, value: str, start: int, end: int) -> tuple[int, int] | None:
        """An INI value on its own line or right after `key =`."""
        pattern = re.compile(rf"(?:^|[=:])[ \t]*({re.escape(value)})[ \t]*(?:[#;].*)?$", re.MULTILINE)
        for match in pattern.finditer(self.text, start, end):
            if match.start(1) not in self.used:
                self.used.add(match.start(1))
                return match.start(1), match.end(1)
        return None
