"""Imports a round of fixes left unused.

Fixes spell the new API through the file's imports (adding `import torch` when nothing reaches
it) and never touch the old imports: each fix stays correct on its own, whichever others are
applied. After a round, an import of a `torch...` name whose local name was used before the round
and is used nowhere after it (not in code, not in a string such as `__all__` or an annotation) is
removed: only what the fixes made unused goes, the rest of the statement keeps its formatting."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import libcst as cst

from auditor.fix.edits import TextEdit, apply_edits
from auditor.fix.plan import _import_bindings
from auditor.python.positions import node_spans
from auditor.python.tree import child_nodes


def name_uses(module: cst.Module) -> Counter[str]:
    """How often each name is read or written in the module (imports themselves, attribute names,
    keyword names and definitions' own names left out)."""
    counts: Counter[str] = Counter()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            counts[node.value] += 1
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, cst.Arg):
            stack.append(node.value)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(child for child in child_nodes(node) if child is not node.name)
        elif isinstance(node, cst.Param):
            stack.extend(child for child in (node.annotation, node.default) if child is not None)
        else:
            stack.extend(child_nodes(node))
    return counts


def _string_words(module: cst.Module) -> set[str]:
    import re

    words: set[str] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.SimpleString, cst.FormattedStringText)):
            words.update(re.findall(r"[A-Za-z_]\w*", node.value))
        stack.extend(child_nodes(node))
    return words


def remove_unused(before: Counter[str], module: cst.Module, text: str,
                  exported: Callable[[], frozenset[str]] | None = None) -> str:
    """`text` (whose tree is `module`) without the torch imports whose names `before` used and
    the module no longer does, nor other modules import from it (`exported`: auditor/fix/reexports.py)."""
    after = name_uses(module)
    gone = {name for name, count in before.items() if count and not after.get(name)}
    if not gone:
        return text
    gone -= _string_words(module)
    if gone and exported is not None:
        gone -= exported()
    if not gone:
        return text
    targets: list[tuple[cst.CSTNode, cst.CSTNode, cst.BaseSmallStatement, set[str]]] = []
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(module, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                names = {local for local, qualified in _import_bindings(small)
                         if local in gone and qualified is not None and qualified.split(".")[0] == "torch"}
                if names:
                    targets.append((node, parent, small, names))
            continue
        stack.extend((child, node) for child in child_nodes(node))
    if not targets:
        return text
    spans = node_spans(module, [n for line, _, small, _ in targets for n in (line, small)])
    edits = []
    for line, block, small, names in targets:
        edit = _edit(module, line, block, small, names, spans, text)
        if edit is not None:
            edits.append(edit)
    return apply_edits(text, edits) if edits else text


def _edit(module: cst.Module, line: cst.SimpleStatementLine, block: cst.CSTNode | None, small: cst.BaseSmallStatement,
          names: set[str], spans: dict[int, tuple[int, int]], text: str) -> TextEdit | None:
    kept = [alias for alias in small.names if _local(alias) not in names]  # type: ignore[union-attr]
    if kept:
        span = spans.get(id(small))
        if span is None:
            return None
        if not isinstance(small, cst.ImportFrom) or small.lpar is None:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        replacement = small.with_changes(names=kept, semicolon=cst.MaybeSentinel.DEFAULT)
        return TextEdit(span[0], span[1], module.code_for_node(replacement))
    span = spans.get(id(line))
    if span is None or len(line.body) > 1:
        return None  # `import os; from torch import cuda`: left as it is
    siblings = getattr(block, "body", ())
    if isinstance(block, cst.Module) or len(siblings) > 1:
        start = text.rfind("\n", 0, span[0]) + 1
        after = text.find("\n", span[1])
        return TextEdit(start, len(text) if after < 0 else after + 1, "")
    return TextEdit(span[0], span[1], "pass")  # the only statement of its block


def _local(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = alias.name
    while isinstance(name, cst.Attribute):
        name = name.value
    return name.value if isinstance(name, cst.Name) else None
