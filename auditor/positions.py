"""Source positions for the few nodes that get reported.

libcst's PositionProvider computes a range for every node and costs about twice the parse.
Generating the code once while counting characters gives the same ranges (checked against
PositionProvider on real code) for about a third of the parse, and only files with findings
pay it."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import libcst as cst
from libcst._nodes.internal import CodegenState


class _OffsetCodegen(CodegenState):
    """Records (start, end) character offsets of every node, syntactic like PositionProvider."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: dict[int, tuple[int, int]] = {}
        self._starts: list[int] = []

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        self.spans.setdefault(id(node), (start, self.offset))

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> Iterator[None]:
        start = self.offset
        yield
        end = self.offset
        if start_node is not None:
            start = self.spans[id(start_node)][0]
        if end_node is not None:
            end = self.spans[id(end_node)][1]
        self.spans[id(node)] = (start, end)


class LineIndex:
    """Offsets to 1-based (line, column) in a text."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        find = text.find
        at = find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = find("\n", at + 1)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1


def node_ranges(module: cst.Module, text: str, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int, int, int]]:
    """(line, column, end_line, end_column), 1-based with an exclusive end, for each node by id."""
    state = _OffsetCodegen(module)
    module._codegen(state)
    index = LineIndex(text)
    ranges: dict[int, tuple[int, int, int, int]] = {}
    for node in nodes:
        span = state.spans.get(id(node))
        if span is None:
            continue
        line, column = index.position(span[0])
        end_line, end_column = index.position(span[1])
        ranges[id(node)] = (line, column, end_line, end_column)
    return ranges
