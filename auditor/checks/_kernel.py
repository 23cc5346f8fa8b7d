"""What the kernel rules (LK4xx) share: one finding per import statement, uses nested in uses
folded into one, and bare references left to the import and the calls."""

from __future__ import annotations

import libcst as cst

from auditor.checks.base import ApiRule, entry_fields, shared_visit
from auditor.context import PythonContext, Reference
from auditor.python.syntax import string_value
from auditor.python.tree import child_nodes

DECORATORS = "LK4:decorators"  # ctx.state key: ids of the expressions used as decorators


class KernelApiRule(ApiRule):
    """An ApiRule that reports an import statement once, however many names it imports (findings
    of one rule on the same range collapse into one).

    Subclasses set `supersedes = (code,)` so a use nested inside another use of the same rule
    (`cp.asarray(cp.zeros(3))`) is one finding. A library's own package is reported like any other
    code: reviewers flag its imports too (hand labels on the corpus), and guessing "this repo is the
    library" from folder names hid real ties.

    Imports, calls and decorators are reported; bare references (`cp.float16` in a dict,
    `stream: cuda.CUstream` annotations) only when `report_refs`, since the import and the calls
    already locate the lock-in and the rest is noise."""

    report_refs: bool = False

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[DECORATORS] = set()

    @shared_visit
    def visit_Decorator(self, node: cst.Decorator, ctx: PythonContext) -> None:
        ctx.state[DECORATORS].add(id(node.decorator))

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.kind == "ref" and not self.report_refs and id(ref.node) not in ctx.state.get(DECORATORS, ()):
            return
        if self.accepts(ref, ctx):
            self.emit(ref, ctx)

    def accepts(self, ref: Reference, ctx: PythonContext) -> bool:
        """Whether this reference is lock-in; the default takes every use the catalogue routes here."""
        return True

    def emit(self, ref: Reference, ctx: PythonContext, **fields: object) -> None:
        values = entry_fields(ref)
        values.update(fields)
        ctx.report(self, ref.report_node, **values)


def literal_strings(node: cst.CSTNode) -> list[str]:
    """Every string literal (and f-string text) inside an expression: `os.path.join(d, "k.cu")`."""
    found: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        value = string_value(current)
        if value is not None:
            found.append(value)
        elif isinstance(current, cst.FormattedString):
            found.append("".join(p.value for p in current.parts if isinstance(p, cst.FormattedStringText)))
        else:
            stack.extend(child_nodes(current))
    return found
