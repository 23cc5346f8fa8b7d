"""Source positions for the few nodes that get reported.

libcst's PositionProvider computes a range for every node and costs about twice the parse.
Generating the code once while counting characters gives the same ranges (checked against
PositionProvider on real code) for about a third of the parse; only files with findings pay
it, and only as far as their last reported node."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

from auditor.textio import line_starts


class _OffsetCodegen(CodegenState):
    """Records (start, end) character offsets of every node, syntactic like PositionProvider."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: dict[int, tuple[int, int]] = {}
        self._starts: list[int] = []
        self._wanted = set(wanted)  # ids still to place; codegen stops once none is left

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
        key = id(node)
        self.spans.setdefault(key, (start, self.offset))
        if key in self._wanted:  # a node's span is final once its own codegen has finished
            self._wanted.discard(key)
            if not self._wanted:
                raise _AllPlaced

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Span:
        return _Span(self, node, start_node, end_node)


class _AllPlaced(Exception):
    """Every reported node is placed: the rest of the file need not be generated."""


class _Span:
    """The context manager libcst's codegen enters around most nodes; a plain class costs a
    third of a @contextmanager generator, and codegen enters one per node."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _OffsetCodegen, node, start_node, end_node) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            return False  # as the generator version: nothing recorded, the error propagates
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = self.state.offset if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)
        return False


class LineIndex:
    """Offsets to 1-based (line, column) in a text, with Python's line ends (textio.line_starts)."""

    def __init__(self, text: str) -> None:
        self.starts = line_starts(text)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1


def node_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """(start, end) character offsets of each node by id (and of every node generated before the
    last of them); one code generation pass that stops at the last node asked for."""
    state = _OffsetCodegen(module, {id(node) for node in nodes})
    try:
        module._codegen(state)
    except _AllPlaced:
        pass  # findings near the top of a file cost only the code up to them
    return state.spans


def node_ranges(module: cst.Module, text: str, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int, int, int]]:
    """(line, column, end_line, end_column), 1-based with an exclusive end, for each node by id."""
    nodes = list(nodes)
    spans = node_spans(module, nodes)
    index = LineIndex(text)
    ranges: dict[int, tuple[int, int, int, int]] = {}
    for node in nodes:
        span = spans.get(id(node))
        if span is None:
            continue
        line, column = index.position(span[0])
        end_line, end_column = index.position(span[1])
        ranges[id(node)] = (line, column, end_line, end_column)
    return ranges
