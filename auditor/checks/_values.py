"""Rules about literal values that matter where they land: a device string, a backend name, a
command line. Shared by LK101 (devices), LK301 (NCCL backend) and LK603 (nvidia-smi)."""

from __future__ import annotations

import re
from typing import ClassVar

import libcst as cst

from auditor.checks.base import Rule
from auditor.context import PythonContext
from auditor.python.syntax import name_of_target, string_value
from auditor.python.tree import child_nodes, descendants


class ValueFlowRule(Rule):
    """A value counts where the rule sees it used (the subclass calls `report_value` or
    `mark_used`), and also when it is stored:

    - in a variable, attribute, dict entry or parameter, or returned by a function, whose name
      matches `role` (`DEVICE = "cuda"`, `backend: str = "nccl"`, `def get_device(): return ...`);
    - in any other name that is later used in the position (`d = "cuda"; x.to(d)`), decided
      once the whole file has been walked.

    A function's local variable whose name says the position but whose every use is a comparison
    (`expected_device_type = "cuda"` after an `elif is_mps_available():` chain, then only `d.type ==
    expected_device_type`) chooses nothing: it names the device a value is checked against.
    """

    role: ClassVar[re.Pattern | None] = None  # names that say the position; None: only by use

    def values_in(self, value: cst.BaseExpression, ctx: PythonContext) -> list[cst.BaseExpression]:
        """The literals inside `value` that this rule is about."""
        raise NotImplementedError

    def report_value(self, node: cst.CSTNode, ctx: PythonContext) -> None:
        ctx.report(self, node)

    def _flow(self, ctx: PythonContext) -> tuple[dict[str, list[cst.BaseExpression]], set[str]]:
        return ctx.state[self.code + ":flow"]

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[self.code + ":flow"] = ({}, set())  # pending name -> values; names used in position
        ctx.state[self.code + ":locals"] = []  # (function name, variable, literals): judged at the end
        ctx.state[self.code + ":functions"] = {}  # function name -> its definitions (only while some are pending)

    def mark_used(self, value: cst.BaseExpression, ctx: PythonContext) -> None:
        """`value` (a name or attribute) was passed to the position."""
        if isinstance(value, (cst.Name, cst.Attribute)):
            self._flow(ctx)[1].add(name_of_target(value))

    def _stored(self, target: cst.CSTNode, value: cst.BaseExpression | None, ctx: PythonContext) -> None:
        literals = self.values_in(value, ctx) if value is not None else []
        name = name_of_target(target) if literals else None
        if name is None:
            return
        if self.role is not None and self.role.search(name):
            scope = ctx.resolver.current
            if isinstance(target, cst.Name) and scope.kind == "function" and name not in scope.globals:
                ctx.state[self.code + ":locals"].append((scope.name, name, literals))
                return
            for literal in literals:
                self.report_value(literal, ctx)
        else:
            self._flow(ctx)[0].setdefault(name, []).extend(literals)

    def visit_Assign(self, node: cst.Assign, ctx: PythonContext) -> None:
        for target in node.targets:
            self._stored(target.target, node.value, ctx)

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx: PythonContext) -> None:
        self._stored(node.target, node.value, ctx)

    def visit_Param(self, node: cst.Param, ctx: PythonContext) -> None:
        self._stored(node.name, node.default, ctx)

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: PythonContext) -> None:
        ctx.state[self.code + ":functions"].setdefault(node.name.value, []).append(node)

    def visit_Dict(self, node: cst.Dict, ctx: PythonContext) -> None:
        if self.role is None:
            return
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = string_value(element.key)
                if key is not None and self.role.search(key):
                    for literal in self.values_in(element.value, ctx):
                        self.report_value(literal, ctx)

    def visit_Return(self, node: cst.Return, ctx: PythonContext) -> None:
        if self.role is not None and node.value is not None and self.role.search(ctx.function_name or "-"):
            for literal in self.values_in(node.value, ctx):
                self.report_value(literal, ctx)

    def finish(self, ctx: PythonContext) -> None:
        functions = ctx.state[self.code + ":functions"]
        for function_name, name, literals in ctx.state[self.code + ":locals"]:
            home = [f for f in functions.get(function_name, ()) if any(n is literals[0] for n in descendants(f))]
            if len(home) == 1 and only_compared(home[0], name):
                continue
            for literal in literals:
                self.report_value(literal, ctx)
        pending, used = self._flow(ctx)
        for name, literals in pending.items():
            if name in used:
                for literal in literals:
                    self.report_value(literal, ctx)


def only_compared(function: cst.FunctionDef, name: str) -> bool:
    """Whether the function reads `name` at least once and only as a side of a comparison (`==`,
    `!=`, `in`, `is`); stores to it are not reads, a `global`/`nonlocal` or any other read is."""
    reads = 0
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(function.body, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(n.name.value == name for n in node.names):
                return False
            continue
        if isinstance(node, cst.Name) and node.value == name:
            if isinstance(parent, (cst.AssignTarget, cst.AnnAssign)):
                continue  # a store
            if not (isinstance(parent, cst.Comparison) and parent.left is node) \
                    and not isinstance(parent, cst.ComparisonTarget):
                return False
            reads += 1
            continue
        if isinstance(node, cst.Attribute):
            stack.append((node.value, node))  # `x.name` is an attribute, not the variable
            continue
        stack.extend((child, node) for child in child_nodes(node))
    return reads > 0
