"""Text edits: from 1-based line/column to offsets, which fixes of one round can go together, and
applying them.

As in ruff, a fix is all or nothing: it is taken only when none of its edits overlaps an edit of a
fix already taken (an identical edit, such as the same added `import torch`, is shared); the rest
waits for the next round, when the file has been checked again. Insertions at the point where
another edit starts or ends touch it without overlapping. Two different import lines added at the
same place go together."""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.model import Fix
from auditor.python.positions import LineIndex

_IMPORT_LINE = re.compile(r"(?:import|from) [\w. ,]+(?:\r?\n)")


@dataclass(frozen=True)
class TextEdit:
    start: int
    end: int
    content: str

    @property
    def is_insertion(self) -> bool:
        return self.start == self.end

    @property
    def adds_import_line(self) -> bool:
        return self.is_insertion and _IMPORT_LINE.fullmatch(self.content) is not None


def to_offsets(fix: Fix, text: str, index: LineIndex | None = None) -> list[TextEdit] | None:
    """The fix's edits as offsets into `text`, in order; None when one does not fit the text (the
    file changed since the fix was computed) or two of them overlap."""
    index = index or LineIndex(text)
    edits = []
    for edit in fix.edits:
        start = _offset(index, text, edit.line, edit.column)
        end = _offset(index, text, edit.end_line, edit.end_column)
        if start is None or end is None or end < start:
            return None
        edits.append(TextEdit(start, end, edit.content))
    edits.sort(key=lambda e: (e.start, e.end))  # stable: insertions at one place keep their order
    for previous, current in zip(edits, edits[1:], strict=False):
        if current.start < previous.end:
            return None
    return edits


def _offset(index: LineIndex, text: str, line: int, column: int) -> int | None:
    if line < 1 or line > len(index.starts) or column < 1:
        return None
    start = index.starts[line - 1]
    end = index.starts[line] - 1 if line < len(index.starts) else len(text)
    offset = start + column - 1
    return offset if offset <= end + 1 and offset <= len(text) else None


def _conflict(a: TextEdit, b: TextEdit) -> bool:
    if a == b:
        return False  # shared
    if a.is_insertion and b.is_insertion:
        return a.start == b.start and not (a.adds_import_line and b.adds_import_line)
    if a.is_insertion:
        return b.start < a.start < b.end
    if b.is_insertion:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def select(fixes: list[Fix], text: str) -> tuple[list[int], list[TextEdit]]:
    """Which fixes (by index) go into this round, in order, and their combined edits."""
    index = LineIndex(text)
    taken: list[int] = []
    accepted: list[TextEdit] = []
    for number, fix in enumerate(fixes):
        edits = to_offsets(fix, text, index)
        if not edits:
            continue
        if any(_conflict(edit, other) for edit in edits for other in accepted):
            continue
        taken.append(number)
        accepted.extend(edit for edit in edits if edit not in accepted)
    return taken, accepted


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """`text` with the (non-overlapping) edits applied; insertions go before what starts there."""
    ordered = sorted(enumerate(edits), key=lambda item: (item[1].start, item[1].end, item[0]))
    out: list[str] = []
    position = 0
    for _, edit in ordered:
        out.append(text[position:edit.start])
        out.append(edit.content)
        position = max(position, edit.end)
    out.append(text[position:])
    return "".join(out)
