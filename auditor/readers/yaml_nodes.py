"""YAML (and JSON, a subset of it) as position-carrying Node trees, safely.

PyYAML's parser (the C one when the wheel has it, else pure Python) yields events with line and
column marks; they are composed here into Nodes without recursion and nothing is ever
constructed, so a `!!python/object` tag stays inert text. An alias is the node it names, never a
copy, so a "billion laughs" document stays as small as its text, and walks visit each node once
(auditor.readers.document.Node.walk). A node budget stops huge documents as their events arrive,
and nesting deeper than the parsers can take becomes an error.
Helm templates (`{{ ... }}` directives) are blanked, keeping every offset, before parsing."""

from __future__ import annotations

import re

from auditor.read.text import brackets_too_deep
from auditor.readers.document import Node

MAX_NODES = 200_000
MAX_DEPTH = 200  # flow brackets; block nesting is bounded by the file size limit
_TEMPLATE = re.compile(r"\{\{-?.*?-?\}\}", re.S)
_TEMPLATE_LINE = re.compile(r"^[ \t]*\{\{-?.*?-?\}\}[ \t]*$", re.M)


class YamlError(ValueError):
    """A YAML text that cannot be read; the message says where and why."""


def _loader():  # the C parser when the wheel has it: several times faster
    import yaml

    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def untemplate(text: str) -> str:
    """Helm/Go template directives replaced by blanks of the same length: a line holding only a
    directive becomes empty; an inline one (`image: {{ .Values.image }}`) becomes a plain word."""
    if "{{" not in text:
        return text
    text = _TEMPLATE_LINE.sub(lambda m: " " * len(m.group(0)), text)
    return _TEMPLATE.sub(lambda m: "x" * len(m.group(0).replace("\n", "")) + "\n" * m.group(0).count("\n"), text)


def parse(text: str) -> list[Node]:
    """Every document in `text` as a Node tree; raises YamlError."""
    import yaml

    if brackets_too_deep(text.encode("utf-8", "replace"), MAX_DEPTH):
        raise YamlError(f"nested deeper than {MAX_DEPTH} levels; not parsed")
    try:
        return _compose(yaml.parse(untemplate(text), Loader=_loader()))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise YamlError(f"invalid YAML: {where}{exc.problem or exc.context or 'syntax error'}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except RecursionError:
        raise YamlError("nested too deeply to parse") from None


def _compose(events) -> list[Node]:
    """Node trees from the parser's event stream: no recursion, and the node budget is checked as
    the events arrive (a huge document stops early instead of being built first). An alias is the
    node it names, never a copy."""
    import yaml

    roots: list[Node] = []
    anchors: dict[str, Node] = {}
    stack: list[list] = []  # [container, pending mapping key]
    count = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            node = anchors.get(event.anchor)
            if node is None:
                raise YamlError(f"invalid YAML: line {event.start_mark.line + 1}: unknown alias *{event.anchor}")
        elif isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            count += 1
            if count > MAX_NODES:
                raise YamlError(f"more than {MAX_NODES} nodes; not read")
            start, end = event.start_mark, event.end_mark
            node = Node(line=start.line + 1, column=start.column + 1, end_line=end.line + 1,
                        end_column=end.column + 1)
            if event.anchor:
                anchors[event.anchor] = node
            if isinstance(event, yaml.ScalarEvent):
                node.value = str(event.value)
                node.quoted = event.style in ("'", '"')
            else:
                node.shape = "seq" if isinstance(event, yaml.SequenceStartEvent) else "map"
                _attach(stack, roots, node)
                stack.append([node, None])
                continue
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            node = stack.pop()[0]
            node.end_line, node.end_column = event.end_mark.line + 1, event.end_mark.column + 1
            continue
        else:
            continue
        _attach(stack, roots, node)
    return roots


def _attach(stack: list[list], roots: list[Node], node: Node) -> None:
    if not stack:
        roots.append(node)
        return
    top = stack[-1]
    container = top[0]
    if container.shape == "seq":
        container.items.append(node)
    elif top[1] is None:
        top[1] = node
    else:
        container.pairs.append((top[1], node))
        top[1] = None
