"""What the kernel rules (LK4xx) share: one finding per import statement, and no findings for a
library's own package when the scanned repository is that library."""

from __future__ import annotations

import re

import libcst as cst

from auditor.checks._helpers import string_value
from auditor.checks.base import ApiRule
from auditor.context import PythonContext, Reference

OWNERS = "LK4:import-owners"  # ctx.state key: id(import alias) -> id(its import statement)
DECORATORS = "LK4:decorators"  # ctx.state key: ids of the expressions used as decorators


class KernelApiRule(ApiRule):
    """An ApiRule that reports an import statement once, however many names it imports.

    Subclasses set `supersedes = (code,)` so a use nested inside another use of the same rule
    (`cp.asarray(cp.zeros(3))`) is one finding, and `skip_own_package` when a repository that *is*
    the library (flash-attn importing `flash_attn.ops`) should not report its internal imports.

    Imports, calls and decorators are reported; bare references (`cp.float16` in a dict,
    `stream: cuda.CUstream` annotations) only when `report_refs`, since the import and the calls
    already locate the lock-in and the rest is noise."""

    skip_own_package: bool = False
    report_refs: bool = False

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[self.code] = set()  # import statements already reported by this rule
        ctx.state[OWNERS] = {}
        ctx.state[DECORATORS] = set()

    def visit_Decorator(self, node: cst.Decorator, ctx: PythonContext) -> None:
        ctx.state[DECORATORS].add(id(node.decorator))

    def visit_Import(self, node: cst.Import, ctx: PythonContext) -> None:
        _own(node.names, node, ctx)

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if not isinstance(node.names, cst.ImportStar):
            _own(node.names, node, ctx)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if self.skip_own_package and is_own_package(ref.entry.name, ctx.path):
            return
        if ref.kind == "ref" and not self.report_refs and id(ref.node) not in ctx.state.get(DECORATORS, ()):
            return
        if self.accepts(ref, ctx):
            self.emit(ref, ctx)

    def accepts(self, ref: Reference, ctx: PythonContext) -> bool:
        """Whether this reference is lock-in; the default takes every use the catalogue routes here."""
        return True

    def emit(self, ref: Reference, ctx: PythonContext, **fields: object) -> None:
        if ref.kind == "import":
            statement = ctx.state.get(OWNERS, {}).get(id(ref.node))
            reported = ctx.state.setdefault(self.code, set())
            if statement is not None:
                if statement in reported:
                    return
                reported.add(statement)
        values = {"api": ref.qualified, "replacement": ref.entry.replacement, "min_torch": ref.entry.since}
        values.update(fields)
        ctx.report(self, ref.node, **values)


def _own(aliases: object, statement: cst.CSTNode, ctx: PythonContext) -> None:
    owners = ctx.state.setdefault(OWNERS, {})
    for alias in aliases:  # type: ignore[attr-defined]
        owners.setdefault(id(alias), id(statement))


def is_own_package(name: str, path: str) -> bool:
    """`flash_attn` imported from a file under `flash_attn/` (or an unpacked `flash-attn-2.8.3/`): the library
    itself. Only top-level package rows count: a compiled extension such as `vllm._C` is always lock-in."""
    if "." in name:
        return False
    versioned = re.compile(re.escape(name) + r"(_v?\d.*)?")
    return any(versioned.fullmatch(part.lower().replace("-", "_")) for part in path.replace("\\", "/").split("/")[:-1])


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
            stack.extend(current.children)
    return found
