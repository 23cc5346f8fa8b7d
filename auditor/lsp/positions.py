"""Positions: findings count 1-based lines and 1-based columns in code points (end exclusive);
LSP counts 0-based lines and 0-based columns in UTF-16 code units (the protocol's default
position encoding), over lines ended by `\\n`, `\\r\\n` or `\\r`, as auditor.read.text splits them."""

from __future__ import annotations

from auditor.read.text import lines_with_ends


class Lines:
    """A document's lines (without their ends), to turn code-point columns into UTF-16 ones."""

    def __init__(self, text: str) -> None:
        self._lines = [line.rstrip("\r\n") for line in lines_with_ends(text)] or [""]
        if text.endswith(("\n", "\r")):
            self._lines.append("")  # the empty last line after a final line end

    @property
    def count(self) -> int:
        return len(self._lines)

    def position(self, line: int, column: int) -> tuple[int, int]:
        """The LSP (line, character) of a 1-based (line, column in code points), clamped to the text."""
        index = min(max(line, 1), len(self._lines)) - 1
        text = self._lines[index]
        points = min(max(column, 1) - 1, len(text))
        return index, utf16_length(text[:points])

    def end(self) -> tuple[int, int]:
        """The LSP position just past the last character of the document."""
        return len(self._lines) - 1, utf16_length(self._lines[-1])


def utf16_length(text: str) -> int:
    """How many UTF-16 code units `text` takes: code points beyond the BMP take two."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)
