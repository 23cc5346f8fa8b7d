"""What LK412 and LK413 share: a library option chosen in code (`load_in_8bit=True`,
`attn_implementation="flash_attention_2"`), found as a keyword argument of any call, a dict entry,
an assignment to a variable or attribute of that name (a dataclass or config default) or an
argparse `default=`."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from auditor.checks.base import Rule
from auditor.context import PythonContext
from auditor.python.syntax import keyword, name_of_target, string_value


class OptionRule(Rule):
    """Reports `option=value` where `option` is in `options` and `chosen(value)` says it picks
    the NVIDIA-only path; subclasses also report whole calls (`calls`) such as BitsAndBytesConfig(...)."""
    fields = frozenset({"api"})

    options: ClassVar[frozenset[str]] = frozenset()
    calls: ClassVar[frozenset[str]] = frozenset()  # class names whose call is the choice, whatever its arguments

    def chosen(self, value: cst.BaseExpression) -> str | None:
        """The choice as text when `value` picks the NVIDIA-only path; None otherwise."""
        raise NotImplementedError

    def report_choice(self, node: cst.CSTNode, option: str, choice: str, ctx: PythonContext) -> None:
        ctx.report(self, node, api=f"{option}={choice}")

    def _is_call(self, node: cst.Call, ctx: PythonContext) -> str | None:
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
            node.func.value if isinstance(node.func, cst.Name) else None
        return name if name in self.calls else None

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        called = self._is_call(node, ctx)
        if called is not None:
            ctx.report(self, node, api=f"{called}(...)")
            return  # its own arguments are part of this one choice
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in self.options:
                choice = self.chosen(arg.value)
                if choice is not None:
                    self.report_choice(arg, arg.keyword.value, choice, ctx)
        default = keyword(node, "default")
        if default is not None and node.args and any(
                (string_value(a.value) or "").lstrip("-").replace("-", "_") in self.options for a in node.args[:2]):
            choice = self.chosen(default.value)  # parser.add_argument("--attn_implementation", default=...)
            if choice is not None:
                self.report_choice(default, "default", choice, ctx)

    def visit_Dict(self, node: cst.Dict, ctx: PythonContext) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) in self.options:
                choice = self.chosen(element.value)
                if choice is not None:
                    self.report_choice(element, string_value(element.key), choice, ctx)

    def visit_Assign(self, node: cst.Assign, ctx: PythonContext) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value, ctx)

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx: PythonContext) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value, ctx)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression, ctx: PythonContext) -> None:
        name = name_of_target(target)
        if name in self.options:
            choice = self.chosen(value)
            if choice is not None:
                self.report_choice(value, name, choice, ctx)


def is_true(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "True"
