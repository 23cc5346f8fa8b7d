"""What rules, readers and the context analysis read off libcst nodes: string literals, device
strings, call arguments, callee names, assignment targets, message calls. No rule lives here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from auditor.python.tree import child_nodes

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue

_CUDA_DEVICE = re.compile(r"cuda(:(\d+|%[a-z]|\{[^{}]*\}))?")
_CUDA_PREFIX = re.compile(r"cuda:?")
DEVICE_WORD = re.compile(r"(^|_)(dev|devs|device|devices)($|_)|device", re.IGNORECASE)


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (or implicitly concatenated) string literal; None otherwise."""
    if isinstance(node, cst.SimpleString):
        raw = node.value
        if "\\" not in raw:  # no escapes: strip the prefix and quotes (evaluated_value compiles)
            prefix = node.prefix.lower()
            if "b" in prefix or "f" in prefix:
                return None
            quote = len(node.quote)
            return raw[len(prefix) + quote:len(raw) - quote]
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes, odd prefixes
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_value(node.left), string_value(node.right)
        return left + right if left is not None and right is not None else None
    return None


def is_cuda_device(node: cst.CSTNode) -> bool:
    """"cuda", "cuda:1", f"cuda:{rank}", "cuda:" + str(i), "cuda:%d" % i, "cuda:{}".format(i)."""
    value = string_value(node)
    if value is not None:
        return _CUDA_DEVICE.fullmatch(value) is not None
    if isinstance(node, cst.FormattedString):
        text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
        first = node.parts[0] if node.parts else None
        return (isinstance(first, cst.FormattedStringText) and _CUDA_PREFIX.fullmatch(first.value) is not None
                and text == first.value and len(node.parts) <= 2)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        left = string_value(node.left)
        return left is not None and _CUDA_DEVICE.fullmatch(left) is not None or left == "cuda:"
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "format"):
        left = string_value(node.func.value)
        return left is not None and _CUDA_DEVICE.fullmatch(left) is not None
    return False


def keyword(call: cst.Call, *names: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    position = 0
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            if arg.star:
                return None  # *args hides the positions
            continue
        if position == index:
            return arg
        position += 1
    return None


def name_of_target(node: cst.CSTNode) -> str | None:
    """`x`, `self.x` or `cfg["x"]` as "x"."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            return string_value(index.value)
    return None


def contains_call_to(node: cst.CSTNode, qualified: str, ctx) -> bool:
    """Whether `node` (e.g. an if-test) calls the function with this qualified name."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call) and ctx.qualify(current.func) == qualified:
            return True
        stack.extend(child_nodes(current))
    return False


def callee_name(call: cst.Call) -> str | None:
    """`f` for `f(...)` and `obj.f(...)`; None for anything else (`g()(...)`)."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def is_message_call(call: cst.Call, catalogue: Catalogue) -> bool:
    """print(...), logger.info(...), RuntimeError(...): their strings are text, not code."""
    name = callee_name(call)
    if name is None:
        return False
    table = catalogue.table("env").get("messages", {})
    return name in table.get("callees", ()) or name.endswith(tuple(table.get("callee_suffixes", ())))
