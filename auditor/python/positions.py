"""Source positions for the few nodes that get reported.

libcst's PositionProvider computes a range for every node and costs about twice the parse.
Generating the code once while counting characters gives the same ranges (checked against
PositionProvider on real code) for about a third of the parse; only files with findings pay
it, and only as far as their last reported node. The same pass keeps the stack of nodes being
generated, so each reported node also gets its enclosing nodes: the context analysis
(auditor/analysis/placement.py) reads its guards from them without another walk."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

from auditor.read.text import line_starts


class _OffsetCodegen(CodegenState):
    """Records (start, end) character offsets of every node, syntactic like PositionProvider."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: dict[int, tuple[int, int]] = {}
        self._starts: list[int] = []
        self._open: list[cst.CSTNode] = []  # the nodes being generated, outermost first
        self.ancestors: dict[int, tuple[cst.CSTNode, ...]] = {}
        self.open_starts: dict[int, int] = {}  # start offsets of the enclosing nodes of reported ones
        self._wanted = set(wanted)  # ids still to place; codegen stops once none is left
        self._synced = 0  # how many of the open nodes (outermost first) have their start in open_starts

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)
        self._open.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        self._open.pop()
        if len(self._open) < self._synced:
            self._synced = len(self._open)
        key = id(node)
        self.spans.setdefault(key, (start, self.offset))
        if key in self._wanted:  # a node's span is final once its own codegen has finished
            self.ancestors[key] = tuple(self._open)
            # only the enclosing nodes opened since the last reported one: n findings in an `and`
            # chain n deep recorded the whole chain each (issue 20, D7)
            synced = self._synced
            self.open_starts.update(zip(map(id, self._open[synced:]), self._starts[synced:], strict=True))
            self._synced = len(self._open)
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
    """Offsets to 1-based (line, column) in a text, with Python's line ends (auditor.read.text.line_starts)."""

    def __init__(self, text: str) -> None:
        self.starts = line_starts(text)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1


def node_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """(start, end) character offsets of each node by id (and of every node generated before the
    last of them); one code generation pass that stops at the last node asked for."""
    return _generate(module, nodes).spans


def _generate(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> _OffsetCodegen:
    state = _OffsetCodegen(module, {id(node) for node in nodes})
    try:
        module._codegen(state)
    except _AllPlaced:
        pass  # findings near the top of a file cost only the code up to them
    return state


class Placed:
    """Where the reported nodes are: their ranges, their enclosing nodes (outermost first) and
    the first line of any node generated on the way (a guard before a reported node)."""

    def __init__(self, state: _OffsetCodegen, index: LineIndex, ranges: dict[int, tuple[int, int, int, int]]) -> None:
        self.ranges = ranges
        self.ancestors = state.ancestors
        self.spans = state.spans  # (start, end) offsets of every node generated (the fixes anchor on them)
        self._open_starts = state.open_starts
        self.index = index

    def line(self, node: cst.CSTNode) -> int | None:
        span = self.spans.get(id(node))
        start = span[0] if span is not None else self._open_starts.get(id(node))
        return self.index.position(start)[0] if start is not None else None


def place_nodes(module: cst.Module, text: str, nodes: Iterable[cst.CSTNode]) -> Placed:
    """Ranges and enclosing nodes of `nodes`, from one code generation up to the last of them."""
    nodes = list(nodes)
    state = _generate(module, nodes)
    index = LineIndex(text)
    ranges: dict[int, tuple[int, int, int, int]] = {}
    for node in nodes:
        span = state.spans.get(id(node))
        if span is None:
            continue
        line, column = index.position(span[0])
        end_line, end_column = index.position(span[1])
        ranges[id(node)] = (line, column, end_line, end_column)
    return Placed(state, index, ranges)


def node_ranges(module: cst.Module, text: str, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int, int, int]]:
    """(line, column, end_line, end_column), 1-based with an exclusive end, for each node by id."""
    return place_nodes(module, text, nodes).ranges
