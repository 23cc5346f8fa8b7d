"""TOML training configs (files in conf/ or configs/ folders, or named on the command line): the
values as a Node tree, placed in the text by auditor.readers.locate (tomllib keeps no positions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor.readers.document import Document, Node
from auditor.readers.locate import Locator, load_toml

if TYPE_CHECKING:
    from auditor.context import FileContext


def document(ctx: FileContext) -> Document:
    data = load_toml(ctx)
    if data is None:
        return Document()
    return Document(trees=[_node(data, (), Locator(ctx.text))])


def _node(value: Any, path: tuple[str, ...], locator: Locator) -> Node:
    if isinstance(value, dict):
        node = Node(shape="map")
        for key, item in value.items():
            where = locator.locate(path, key)
            key_node = Node(line=where.line, column=where.column, end_line=where.end_line,
                            end_column=where.end_column, value=key)
            node.pairs.append((key_node, _node(item, (*path, key), locator)))
        return node
    if isinstance(value, list):
        return Node(shape="seq", items=[_node(item, path, locator) for item in value])
    text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    where = locator.locate(path[:-1], path[-1] if path else None, text if isinstance(value, str) else None)
    return Node(line=where.line, column=where.column, end_line=where.end_line, end_column=where.end_column,
                value=text, quoted=isinstance(value, str))
