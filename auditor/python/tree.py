"""Cheap traversal of libcst trees: children read straight from the dataclass fields.

libcst's own `.children` rebuilds every child node (through its visitor machinery) and its
classes use ABCMeta, so `isinstance(x, cst.CSTNode)` takes the slow path; both showed up as the
largest costs in profiles. Whitespace and punctuation fields are skipped: comments and
formatting never hold lock-in."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
    "trailing_whitespace", "header", "footer", "empty_lines", "colon", "equal", "dot",
    "star", "arrow", "whitespace", "operator",
})
_FIELDS: dict[type, tuple[str, ...]] = {}

NODE, SEQUENCE, OTHER = "node", "sequence", "other"
KIND: dict[type, str] = {tuple: SEQUENCE, list: SEQUENCE}


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold code (not whitespace or punctuation)."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[node_type] = fields
    return fields


def kind_of(value_type: type) -> str:
    """NODE, SEQUENCE or OTHER for a field value's type (cached: ABC checks are slow)."""
    kind = KIND.get(value_type)
    if kind is None:
        kind = NODE if issubclass(value_type, cst.CSTNode) else OTHER
        KIND[value_type] = kind
    return kind


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    for name in child_fields(type(node)):
        value = getattr(node, name)
        kind = kind_of(type(value))
        if kind is NODE:
            found.append(value)
        elif kind is SEQUENCE:
            found.extend(item for item in value if kind_of(type(item)) is NODE)
    return found


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))
