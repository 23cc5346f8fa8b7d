"""Shared base of the cuda-api family (LK202-LK299): which references to a `torch.cuda.*` or
backend-flag name are not lock-in even though they name the API.

- annotations (`stream: torch.cuda.Stream | None`): never executed as CUDA calls;
- `x = torch.cuda.Stream` aliases to a plain name: the walker resolves `x` and reports its uses;
- `torch.cuda.Stream = Shim` monkeypatching (porting shims), except for flag rules where an
  assignment is the use;
- the value copied into a module attribute (`cudnn.benchmark = prev`): the target is the use;
- dispatch tables: `{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize}` and
  `TABLE["cuda"] = torch.cuda.empty_cache`;
- per-backend dispatch: the CUDA branch of an if/elif chain whose other branches call another
  backend (`elif is_xpu_available(): torch.xpu.empty_cache()`): the code is already portable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from auditor.checks._helpers import string_value
from auditor.checks.base import ApiRule, shared_visit
from auditor.names import dotted_parts
from auditor.tree import child_nodes, descendants

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference

STATE = "cuda-api"  # shared by the family: every rule adds the same node ids
def skipped(ctx: PythonContext, key: str = STATE) -> set[int]:
    return ctx.state.setdefault(key, set())


def _backends(ctx: PythonContext) -> tuple[str, ...]:
    """The other backends' namespaces when the file mentions one of them, else () (cheap exit)."""
    cached = ctx.state.get(STATE + "-backends")
    if cached is None:
        table = ctx.catalogue.table("cuda_api").get("cuda-api-dispatch", {})
        text = ctx.text.lower()
        cached = tuple(table.get("backends", ())) if any(w in text for w in table.get("words", ())) else ()
        ctx.state[STATE + "-backends"] = cached
    return cached


def _branches(node: cst.If) -> list[cst.CSTNode]:
    """The bodies of an if/elif/else chain."""
    bodies: list[cst.CSTNode] = []
    current: cst.If | cst.Else | None = node
    while current is not None:
        bodies.append(current.body)
        current = current.orelse if isinstance(current, cst.If) else None
    return bodies


def _uses_other_backend(root: cst.CSTNode, backends: tuple[str, ...], ctx: PythonContext) -> bool:
    """Whether `root` mentions another backend's API; memoised per node, so nested if chains
    cost one pass over the file in total."""
    memo: dict[int, bool] = ctx.state.setdefault(STATE + "-memo", {})
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in memo:
            continue
        if isinstance(node, cst.Attribute) and dotted_parts(node) is not None:
            qualified = ctx.qualify(node) or ""
            memo[id(node)] = any(qualified == b or qualified.startswith(b + ".") for b in backends)
            continue  # a dotted chain holds only names
        kids = child_nodes(node)
        if expanded:
            memo[id(node)] = any(memo.get(id(k), False) for k in kids)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
    return memo[id(root)]



def _dispatch_branches(ctx: PythonContext) -> set[int]:
    """Ids of the nodes in if/elif branches whose sibling serves another backend, for every chain
    met so far (the walk meets a chain before anything inside it)."""
    dispatch = skipped(ctx, STATE + "-dispatch")
    chains = ctx.state.pop(STATE + "-chains", None)
    backends = _backends(ctx)
    for branches in chains or ():
        other = [_uses_other_backend(b, backends, ctx) for b in branches]
        for index, branch in enumerate(branches):
            if id(branch) not in dispatch and any(other[:index] + other[index + 1:]):
                dispatch.update(id(n) for n in descendants(branch))  # a sibling serves another backend
    return dispatch


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
    def visit_If(self, node: cst.If, ctx: PythonContext) -> None:
        done = skipped(ctx, STATE + "-if")
        if id(node) in done:
            return
        backends = _backends(ctx)
        if not backends:
            return
        elif_ = node.orelse
        while isinstance(elif_, cst.If):  # each elif is an If too: judge the chain once, from the top
            done.add(id(elif_))
            elif_ = elif_.orelse
        branches = _branches(node)
        if len(branches) >= 2:  # judged when a reference inside is about to be kept (most never are)
            ctx.state.setdefault(STATE + "-chains", []).append(branches)

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
        if node_id in skipped(ctx) or node_id in _dispatch_branches(ctx):
            return False
        return self.assign_is_use or node_id not in skipped(ctx, STATE + "-patched")


def _string_subscript(target: cst.BaseExpression) -> bool:
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return isinstance(index, cst.Index) and string_value(index.value) is not None
