"""Which PyTorch release a test selects: `is_torch_version(">=", "2.4")`, `torch.__version__ >=
"2.4.0"`, `not is_torch_greater_or_equal("2.6")`, `TORCH_VERSION_AT_LEAST_2_5`.

Every target runs a current PyTorch (rules/contexts.toml [torch_versions] `floor`), so where a test
compares against a release at or below that floor, one branch is the current one and the other only
runs on an older PyTorch (`torch.Stream() if is_torch_version(">=", "2.7") else torch.cuda.Stream()`):
CUDA code in that branch is no tie of the current path. A release above the floor, a comparison for
equality or a version that is not written out says nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

import libcst as cst

from auditor.python.syntax import callee_name, name_of_target, string_value

Branch = Literal["new", "old"]
_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
_OPERATORS: dict[type, str] = {cst.GreaterThanEqual: ">=", cst.GreaterThan: ">", cst.LessThanEqual: "<=",
                               cst.LessThan: "<"}
_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)")


class TorchVersions:
    """Reads version tests of one file; `qualify` resolves names through its imports."""

    def __init__(self, table: dict, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        self.floor = _release(str(table.get("floor", "0.0"))) or (0, 0)
        self.comparing = frozenset(table.get("comparing", ()))  # is_torch_version(op, version)
        self.at_least = re.compile(table.get("at_least", r"$^"))  # is_torch_greater_or_equal(version)
        self.constants = re.compile(table.get("constants", r"$^"))  # TORCH_VERSION_AT_LEAST_2_5
        self.attributes = frozenset(table.get("attributes", ()))  # torch.__version__
        self.qualify = qualify

    def branch(self, test: cst.BaseExpression) -> Branch | None:
        """"new" when `test` holds on a current PyTorch and fails on an old one, "old" the other way
        round, None when it is no such test."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.branch(test.expression)
            return None if inner is None else "old" if inner == "new" else "new"
        found = self._read(test)
        if found is None:
            return None
        operator, release = found
        if release > self.floor:
            return None  # a current PyTorch may still be older than that release
        return "new" if operator in (">=", ">") else "old"

    def _read(self, test: cst.BaseExpression) -> tuple[str, tuple[int, int]] | None:
        if isinstance(test, cst.Call):
            return self._call(test)
        if isinstance(test, (cst.Name, cst.Attribute)):
            match = self.constants.fullmatch(name_of_target(test) or "")
            return (">=", (int(match.group(1)), int(match.group(2)))) if match else None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            operator = _OPERATORS.get(type(test.comparisons[0].operator))
            left, right = test.left, test.comparisons[0].comparator
            if operator is None:
                return None
            if self._mentions_torch(left) and (release := _literal_release(right)) is not None:
                return operator, release
            if self._mentions_torch(right) and (release := _literal_release(left)) is not None:
                return _FLIP[operator], release
        return None

    def _call(self, call: cst.Call) -> tuple[str, tuple[int, int]] | None:
        name = callee_name(call)
        values = [arg.value for arg in call.args if arg.keyword is None]
        if name in self.comparing and len(values) == 2:  # is_torch_version(">=", "2.4")
            operator = string_value(values[0])
            release = _literal_release(values[1])
            return (operator.strip(), release) if operator and operator.strip() in _FLIP and release else None
        if name is not None and self.at_least.fullmatch(name) and len(values) == 1:
            release = _literal_release(values[0])
            return (">=", release) if release else None
        return None

    def _mentions_torch(self, node: cst.BaseExpression) -> bool:
        """`torch.__version__`, alone or inside `version.parse(...)` / `parse(...).release`."""
        stack: list[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Attribute) and self.qualify(current) in self.attributes:
                return True
            stack.extend(current.children)
        return False


def _release(text: str) -> tuple[int, int] | None:
    match = _RELEASE.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _literal_release(node: cst.BaseExpression) -> tuple[int, int] | None:
    """"2.4.0", (2, 4), `version.parse("2.4")`, `Version("2.4")`: the release written out."""
    text = string_value(node)
    if text is not None:
        return _release(text)
    if isinstance(node, cst.Tuple) and len(node.elements) >= 2:
        parts = [e.value for e in node.elements[:2]]
        if all(isinstance(p, cst.Integer) for p in parts):
            return int(parts[0].value), int(parts[1].value)
        return None
    if isinstance(node, cst.Call) and len(node.args) == 1:
        return _literal_release(node.args[0].value)
    return None
