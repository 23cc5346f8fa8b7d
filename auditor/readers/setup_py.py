"""setup.py, read statically from the tree the Python scan already parsed: the requirement keywords of
`setup(...)` / `setuptools.setup(...)` as literals, or as names bound to literals elsewhere in the
file (`REQUIRED = [...]`, `REQUIRED.append("x")`, `REQUIRED += [...]`, `EXTRAS["gpu"] = [...]`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from auditor.python.syntax import string_value
from auditor.readers import Dependencies, IndexUrl, parse_requirement, salvage_requirement

if TYPE_CHECKING:
    from auditor.context import PythonContext

_LIST_KEYWORDS = ("install_requires", "setup_requires", "tests_require")
_DEPTH = 8  # how far names may refer to names
_CUDA_WORDS = ("cuda", "nvidia", "nvcc")


@dataclass
class _Bindings:
    """What the file binds to each plain name (assignments, appends, item assignments)."""

    values: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    items: dict[str, list[tuple[str, cst.BaseExpression]]] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)


class _Collector(cst.CSTVisitor):
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.bindings = _Bindings()
        self.setup_names = {"setup"}
        self.guards: list[bool] = []  # per enclosing `if`: does its test ask for CUDA / NVIDIA?

    def visit_If(self, node: cst.If) -> None:
        test = self.module.code_for_node(node.test).lower()
        self.guards.append(any(word in test for word in _CUDA_WORDS))

    def leave_If(self, original_node: cst.If) -> None:
        self.guards.pop()

    @property
    def guarded(self) -> bool:
        """Inside `if torch.cuda.is_available():` and the like: a CUDA-only branch, not lock-in."""
        return any(self.guards)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._bind(node.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if self.guarded:
            return
        if isinstance(target, cst.Name):
            self.bindings.values.setdefault(target.value, []).append(value)
        elif (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
              and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
            key = string_value(target.slice[0].slice.value)
            if key is not None:
                self.bindings.items.setdefault(target.value.value, []).append((key, value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and not self.guarded:
            if func.attr.value in ("append", "extend", "insert", "add", "update") and node.args:
                arg = node.args[-1].value
                target = func.value.value
                if func.attr.value == "update":
                    self.bindings.values.setdefault(target, []).append(arg)
                else:
                    self.bindings.values.setdefault(target, []).append(
                        arg if func.attr.value == "extend" else cst.List([cst.Element(arg)]))
        if _is_setup(func, self.setup_names):
            self.bindings.calls.append(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        """`from setuptools import setup as make` makes `make(...)` a setup call."""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == "setup" and alias.asname is not None:
                if isinstance(alias.asname.name, cst.Name):
                    self.setup_names.add(alias.asname.name.value)


def _is_setup(func: cst.BaseExpression, names: set[str]) -> bool:
    """`setup(...)`, `setuptools.setup(...)`, `distutils.core.setup(...)`, `st.setup(...)`, aliases."""
    if isinstance(func, cst.Name):
        return func.value in names
    return (isinstance(func, cst.Attribute) and func.attr.value == "setup"
            and isinstance(func.value, (cst.Name, cst.Attribute)))


class _Evaluator:
    def __init__(self, bindings: _Bindings) -> None:
        self.bindings = bindings

    def strings(self, node: cst.BaseExpression, depth: int = 0) -> list[tuple[str, cst.CSTNode]]:
        """Every string literal a list-valued expression can hold, with its node."""
        if depth > _DEPTH:
            return []
        value = string_value(node)
        if value is not None:
            return [(value, node)]
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            found = []
            for element in node.elements:
                found.extend(self.strings(element.value, depth + 1))
            return found
        if isinstance(node, cst.IfExp):
            return self.strings(node.body, depth + 1) + self.strings(node.orelse, depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self.strings(node.left, depth + 1) + self.strings(node.right, depth + 1)
        if isinstance(node, cst.Name):
            found = []
            for bound in self.bindings.values.get(node.value, []):
                found.extend(self.strings(bound, depth + 1))
            return found
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
                and node.func.value in ("list", "sorted", "set", "tuple") and len(node.args) == 1):
            return self.strings(node.args[0].value, depth + 1)
        return []

    def groups(self, node: cst.BaseExpression, depth: int = 0) -> list[tuple[str, list[tuple[str, cst.CSTNode]]]]:
        """extras_require: (extra, its strings) for a dict literal or a name bound to one."""
        if depth > _DEPTH:
            return []
        if isinstance(node, cst.Dict):
            found = []
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    key = string_value(element.key)
                    found.append((key or "?", self.strings(element.value, depth + 1)))
            return found
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
            return [(a.keyword.value, self.strings(a.value, depth + 1)) for a in node.args if a.keyword]
        if isinstance(node, cst.Name):
            found = []
            for bound in self.bindings.values.get(node.value, []):
                found.extend(self.groups(bound, depth + 1))
            for key, value in self.bindings.items.get(node.value, []):
                found.append((key, self.strings(value, depth + 1)))
            return found
        return []


def read_setup_py(ctx: PythonContext) -> Dependencies:
    collector = _Collector(ctx.module)
    ctx.module.visit(collector)
    evaluate = _Evaluator(collector.bindings)
    deps = Dependencies()
    seen: set[int] = set()  # a string node reached twice (e.g. through two names) counts once
    for call in collector.bindings.calls:
        for arg in call.args:
            if arg.keyword is None:
                continue
            keyword = arg.keyword.value
            if keyword in _LIST_KEYWORDS:
                for text, node in evaluate.strings(arg.value):
                    _add(ctx, deps, seen, text, node, keyword, None)
            elif keyword == "extras_require":
                for extra, strings in evaluate.groups(arg.value):
                    for text, node in strings:
                        _add(ctx, deps, seen, text, node, keyword, extra)
            elif keyword == "dependency_links":
                for text, node in evaluate.strings(arg.value):
                    if id(node) not in seen:
                        seen.add(id(node))
                        deps.indexes.append(IndexUrl(node=node, url=text, option="dependency_links"))
    return deps


def _add(ctx: PythonContext, deps: Dependencies, seen: set[int], text: str, node: cst.CSTNode, origin: str,
         group: str | None) -> None:
    if id(node) in seen or not text.strip() or text.lstrip().startswith("#"):
        return
    seen.add(id(node))
    try:
        item = parse_requirement(text.strip())
    except ValueError as exc:
        ctx.error("parse", f"invalid requirement {text!r} in {origin}: {exc}")
        item = salvage_requirement(text)
        if item is None:
            return
    item.node, item.origin, item.group = node, origin, group
    deps.requirements.append(item)
