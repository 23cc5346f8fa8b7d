"""Shared base of the cuda-api family (LK202-LK299): which references to a `torch.cuda.*` or
backend-flag name are not lock-in even though they name the API.

- annotations (`stream: torch.cuda.Stream | None`): never executed as CUDA calls;
- `x = torch.cuda.Stream` aliases to a plain name: the walker resolves `x` and reports its uses;
- `torch.cuda.Stream = Shim` monkeypatching (porting shims), except for flag rules where an
  assignment is the use;
- the value copied into a module attribute (`cudnn.benchmark = prev`): the target is the use;
- dispatch tables: `{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize}` and
  `TABLE["cuda"] = torch.cuda.empty_cache`.

The CUDA branch of an if/elif chain whose other branches serve other backends (`elif
is_xpu_available(): torch.xpu.empty_cache()`) is reported, in its context: "guarded", working on
the targets the other branches serve (auditor/analysis/placement.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from auditor.checks.base import ApiRule, shared_visit
from auditor.python.syntax import string_value

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference

STATE = "cuda-api"  # shared by the family: every rule adds the same node ids
def skipped(ctx: PythonContext, key: str = STATE) -> set[int]:
    return ctx.state.setdefault(key, set())


class CudaApiRule(ApiRule):
    """An ApiRule that leaves out references which only name the API (see the module doc)."""

    assign_is_use: ClassVar[bool] = False  # flags: `torch.backends.cudnn.benchmark = True` is the use

    @shared_visit
    def visit_Assign(self, node: cst.Assign, ctx: PythonContext) -> None:
        ids = skipped(ctx)
        value_is_name = isinstance(node.value, (cst.Name, cst.Attribute))
        targets = [t.target for t in node.targets]
        if value_is_name and all(isinstance(t, cst.Name) for t in targets):
            ids.add(id(node.value))  # an alias: its uses are resolved and reported
        if value_is_name and any(_string_subscript(t) for t in targets):
            ids.add(id(node.value))  # TABLE["cuda"] = torch.cuda.empty_cache
        if value_is_name and any(isinstance(t, cst.Attribute) and ctx.qualify(t) for t in targets):
            ids.add(id(node.value))  # flag restore / patch: `cudnn.benchmark = prev`; the target counts
        patched = skipped(ctx, STATE + "-patched")  # reported only by rules where assignment is the use
        patched.update(id(t) for t in targets if isinstance(t, cst.Attribute))

    @shared_visit
    def visit_AnnAssign(self, node: cst.AnnAssign, ctx: PythonContext) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.value, (cst.Name, cst.Attribute)):
            skipped(ctx).add(id(node.value))

    @shared_visit
    def visit_DictElement(self, node: cst.DictElement, ctx: PythonContext) -> None:
        if isinstance(node.value, (cst.Name, cst.Attribute)) and string_value(node.key) is not None:
            skipped(ctx).add(id(node.value))  # {"cuda": torch.cuda.synchronize, "xpu": ...}

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if ref.kind != "import" and not self.keep(ref, ctx):
            return
        super().on_reference(ref, ctx)

    def keep(self, ref: Reference, ctx: PythonContext) -> bool:
        """Whether this (non-import) reference is lock-in rather than a mere mention."""
        if ctx.in_annotation:
            return False
        node_id = id(ref.node)
        if node_id in skipped(ctx):
            return False
        return self.assign_is_use or node_id not in skipped(ctx, STATE + "-patched")


def _string_subscript(target: cst.BaseExpression) -> bool:
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return isinstance(index, cst.Index) and string_value(index.value) is not None
