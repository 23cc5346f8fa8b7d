"""The Accelerator (accelerate) or Fabric (lightning) object in scope at a device tie, for a project
whose device that object owns (auditor/fix/device_owner.py, kind `accelerator`).

A tie is rewritten to `<object>.device` only where the object certainly exists when the tie runs:
- `name = Accelerator(...)` standing directly in a function's body (or the module's), with the tie
  in a later statement of that body (also inside a function defined by a later statement, which
  cannot run before it), and `name` bound nowhere else in the file;
- `self.name = Accelerator(...)` standing directly in a class's `__init__`, with the tie in the body
  of another method of that class (its first parameter `self`, not a static or class method), or in
  a later statement of `__init__`, and `self.name` assigned nowhere else in the file.
An object built under a condition, passed in, or assigned elsewhere is not followed: the tie keeps
its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from auditor.python.tree import descendants

if TYPE_CHECKING:
    from auditor.fix.plan import Rewriter


@dataclass(frozen=True)
class _Built:
    """One `target = Accelerator(...)` statement: where it stands and what names it."""

    text: str  # "accelerator" or "self.accelerator"
    scope: cst.CSTNode  # the FunctionDef (or Module) whose body holds the statement directly
    index: int  # the statement's position in that body
    klass: cst.ClassDef | None  # for `self.x`: the class whose __init__ builds it


def accelerator_in_scope(at: cst.CSTNode, rewriter: Rewriter) -> str | None:
    """The expression naming the Accelerator/Fabric object that certainly exists where `at` runs
    (`accelerator`, `self.fabric`), or None."""
    built = _built(rewriter)
    if not built:
        return None
    chain = _chain(at, rewriter)
    for item in built:
        if item.klass is None:
            if any(scope is item.scope and index > item.index for scope, index, _ in chain):
                return item.text
            continue
        for scope, index, method_of in chain:
            if method_of is not item.klass:
                continue
            if scope is item.scope:
                if index > item.index:
                    return item.text
            elif _instance_method(scope):
                return item.text
            break  # the innermost method of that class decides
    return None


def _chain(at: cst.CSTNode, rewriter: Rewriter) -> list[tuple[cst.CSTNode, int, cst.ClassDef | None]]:
    """Each function (and the module) whose body holds `at`, innermost first: (the function, the
    position of the body statement holding `at`, the class it is a method of)."""
    found = []
    child, parent = at, rewriter.parent(at)
    while parent is not None:
        if isinstance(parent, cst.Module):
            found.append((parent, _position(parent.body, child), None))
        elif isinstance(parent, cst.IndentedBlock):
            owner = rewriter.parent(parent)
            if isinstance(owner, cst.FunctionDef) and owner.body is parent:
                block = rewriter.parent(owner)
                klass = rewriter.parent(block) if isinstance(block, cst.IndentedBlock) else None
                found.append((owner, _position(parent.body, child), klass if isinstance(klass, cst.ClassDef) else None))
        child, parent = parent, rewriter.parent(parent)
    return found


def _position(body: tuple | list, child: cst.CSTNode) -> int:
    return next((i for i, statement in enumerate(body) if statement is child), -1)


def _instance_method(function: cst.CSTNode) -> bool:
    if not isinstance(function, cst.FunctionDef):
        return False
    params = function.params.params or function.params.posonly_params
    decorated = {d.decorator.value for d in function.decorators if isinstance(d.decorator, cst.Name)}
    return bool(params) and params[0].name.value == "self" and not decorated & {"staticmethod", "classmethod"}


def _built(rewriter: Rewriter) -> list[_Built]:
    """The file's `x = Accelerator(...)` / `self.x = Fabric(...)` statements that stand directly in a
    body, with a target bound only there; computed once per file."""
    state = rewriter.ctx.state
    if "fix:accelerator-objects" in state:
        return state["fix:accelerator-objects"]
    wanted = set(rewriter.ctx.catalogue.table("fixes").get("device-owner", {}).get("accelerator_objects", ()))
    found: list[_Built] = []
    text = rewriter.ctx.text
    if any(name.rsplit(".", 1)[-1] in text for name in wanted):
        bound: dict[str, int] = {}
        candidates = []
        for node in descendants(rewriter.module):
            for target in _bound_targets(node):
                key = rewriter.code(target)
                bound[key] = bound.get(key, 0) + 1
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call) \
                    and rewriter.ctx.qualify(node.value.func) in wanted:
                candidates.append(node)
        for node in candidates:
            item = _placed(node, rewriter)
            if item is not None and bound.get(item.text) == 1:
                found.append(item)
    state["fix:accelerator-objects"] = found
    return found


def _placed(assign: cst.Assign, rewriter: Rewriter) -> _Built | None:
    """The statement's place, when it stands directly in a function's (or the module's) body."""
    target = assign.targets[0].target
    line = rewriter.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    block = rewriter.parent(line)
    if isinstance(block, cst.Module) and isinstance(target, cst.Name):
        return _Built(target.value, block, _position(block.body, line), None)
    function = rewriter.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(function, cst.FunctionDef):
        return None
    index = _position(block.body, line)
    if isinstance(target, cst.Name):
        return _Built(target.value, function, index, None)
    outer = rewriter.parent(function)
    klass = rewriter.parent(outer) if isinstance(outer, cst.IndentedBlock) else None
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self" \
            and function.name.value == "__init__" and _instance_method(function) and isinstance(klass, cst.ClassDef):
        return _Built(f"self.{target.attr.value}", function, index, klass)
    return None


def _bound_targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The names (and `self.x` attributes) a node binds, unpacked from tuples (`a, acc = ...`)."""
    found = []
    for target in _targets(node):
        stack = [target]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.Tuple, cst.List)):
                stack.extend(e.value for e in current.elements)
            elif isinstance(current, cst.StarredElement):
                stack.append(current.value)
            else:
                found.append(current)
    return found


def _targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    if isinstance(node, (cst.For, cst.CompFor)):
        return [node.target]
    if isinstance(node, cst.WithItem) and node.asname is not None:
        return [node.asname.name]
    if isinstance(node, cst.NamedExpr):
        return [node.target]
    if isinstance(node, cst.Param):
        return [node.name]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, cst.ImportAlias):
        return [node.asname.name if node.asname is not None else node.name]
    return []
