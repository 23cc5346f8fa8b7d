"""How a rule describes a rewrite, and how that description becomes text edits.

A rule's `fix(report, rewriter)` runs after the walk, only for files with findings, and returns
`FixPlan`s: edits anchored on the nodes it saw (`NodeEdit(Pos(node, "start"), Pos(node, "end"),
"new text")`). The positions of those nodes are computed in the same code-generation pass that
places the findings, then every plan becomes a `model.Fix` of 1-based line/column text edits in
the file's own newline style, the only kind of fix that survives the process pool and the cache.

`Rewriter` holds what rules share when they build a fix: the parent of a node, the code of a
node, the name under which a qualified name is reachable through the file's own imports (`th`
for `import torch as th`, `dist` for `import torch.distributed as dist`; an `import torch` line
added when nothing reaches it), guards around a statement, and argument edits. It computes the
tree facts it needs once per file and only when a fix asks for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from auditor.fix.accelerator_scope import accelerator_in_scope
from auditor.model import Edit, Fix, NewFile
from auditor.python.names import dotted_name, dotted_parts
from auditor.python.positions import LineIndex
from auditor.python.tree import KIND, NODE, SEQUENCE, child_fields, descendants, kind_of

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference
    from auditor.fix.device_owner import DeviceOwner


@dataclass(frozen=True)
class Pos:
    """A place in the file relative to a node: its `start` or `end`; `line-start` (column 1 of
    its first line) or `line-after` (the start of the line after its last line). With no node:
    the end of the file."""

    node: cst.CSTNode | None
    side: str = "start"


@dataclass
class NodeEdit:
    """Replace the text from `start` to `end` with `content`; a callable content gets the
    indentation of the start line (for statements inserted before another one)."""

    start: Pos
    end: Pos
    content: str | Callable[[str], str]


@dataclass
class CreateFile(NodeEdit):
    """Create the file `path` (relative to the scanned root) with `content`, beside the text edits
    of the same fix (the project's device module); never over an existing file. `start`/`end`
    are unused (no node)."""

    path: str = ""

    @classmethod
    def of(cls, path: str, content: str) -> CreateFile:
        return cls(Pos(None), Pos(None), content, path)


@dataclass
class FixPlan:
    """One rewrite of one finding, before positions are known."""

    applicability: str  # safe | unsafe | display
    message: str
    edits: list[NodeEdit]
    min_torch: str | None = None
    gated: bool = False  # a swap that makes other accelerators selectable: needs a CUDA-clean file (5.5)
    fix_id: str = ""  # the catalogue's fix number (F01 ...), for docs
    reason: str | None = None  # with `display`: why this rewrite is only shown
    device: bool = False  # written through the project's device owner (policy: the contexts it stays out of)
    display_same: bool = False  # on NVIDIA the new code gives the very value the old did: a display may take it

    @classmethod
    def held(cls, reason: str, fix_id: str = "") -> FixPlan:
        """No rewrite for this finding, and why (every suggestion that is not applied says so): a
        `display` fix without edits, shown as "not fixed: <reason>"."""
        return cls("display", "", [], None, False, fix_id, reason)

    @classmethod
    def to_device(cls, applicability: str, message: str, edits: list[NodeEdit], fix_id: str) -> FixPlan:
        """A rewrite to the project's device (Rewriter.device_expr)."""
        return cls(applicability, message, edits, None, False, fix_id, device=True)


@dataclass
class Reported:
    """What a rule reported: the node, the message fields and, for catalogue names, the reference."""

    node: cst.CSTNode
    fields: dict[str, Any]
    ref: Reference | None = None


@dataclass
class PlannedFix:
    """A finding's fix candidates, best first (a newer torch first, the older-torch form after),
    plus what the policy needs to know about the finding."""

    fixes: list[tuple[Fix, bool]] = field(default_factory=list)  # (fix, gated)
    import_only: bool = False  # the finding is an import statement, not a use
    # Contexts where its rewrites to the project's device stay suggestions (policy.finalize); empty for others.
    device_contexts: frozenset[str] = frozenset()
    # Every rewrite gives, on NVIDIA, the value the CUDA call gave: a display of it shows the same text there.
    display_same: bool = False


# -- the rewriter ------------------------------------------------------------------------------------
_INT_NAME_HINTS = ("rank", "idx", "index", "_id", "gpu", "device_id", "local_device")


class Rewriter:
    """Per-file helpers for building fixes (see the module doc)."""

    def __init__(self, ctx: PythonContext) -> None:
        self.ctx = ctx
        self.module = ctx.module
        self.newline = ctx.module.default_newline
        self.indent_unit = ctx.module.default_indent
        self._parents: dict[int, cst.CSTNode] | None = None
        self._imports: dict[str, str] | None = None
        self._deciders: dict[int, tuple[cst.CSTNode, cst.CSTNode | None]] = {}
        self.decided: dict[int, str | None] = {}  # per deciding node: what its branches say (fix/swaps.py)

    # -- tree facts -----------------------------------------------------------------------------------
    def _map_parents(self) -> dict[int, cst.CSTNode]:
        """Every node's parent, in one pass over the file (the walker's field reading, not libcst's
        visitor), made on the first fix that asks."""
        parents: dict[int, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            for name in child_fields(type(node)):
                value = getattr(node, name)
                kind = KIND.get(type(value)) or kind_of(type(value))
                if kind is NODE:
                    parents[id(value)] = node
                    push(value)
                elif kind is SEQUENCE:
                    for item in value:
                        if (KIND.get(type(item)) or kind_of(type(item))) is NODE:
                            parents[id(item)] = node
                            push(item)
        return parents

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if self._parents is None:
            self._parents = self._map_parents()
        return self._parents.get(id(node))

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement holding `node`: the small statement (`x = ...`) or, for a class's base or a
        compound statement's header, the compound statement."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            current = self.parent(current)
        return current

    def decider(self, node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode | None]:
        """(the node's outermost enclosing expression, the If, IfExp, While or statement right above
        it). Every node climbed through shares the answer: in an `and` chain of n findings, each
        climbing alone made the fixes quadratic (issue 20, D7)."""
        climbed: list[int] = []
        parent = self.parent(node)
        while parent is not None and not isinstance(parent, (cst.If, cst.IfExp, cst.While, cst.BaseStatement)):
            known = self._deciders.get(id(parent))
            if known is not None:
                node, parent = known
                break
            climbed.append(id(parent))
            node, parent = parent, self.parent(parent)
        for key in climbed:
            self._deciders[key] = (node, parent)
        return node, parent

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def device_names(self) -> frozenset[str]:
        """Names this file binds to a device object, so that an int-looking name (`gpu`) is not
        taken for an index: `gpu = torch.device(...)`, `gpu = x.device`, `gpu: torch.device`, a
        parameter annotated `torch.device`."""
        found = self.ctx.state.get("fix:device-names")
        if found is None:
            names: set[str] = set()
            for node in descendants(self.module):
                if isinstance(node, cst.Assign) and _device_valued(node.value, self.ctx.qualify):
                    names.update(n.target.value for n in node.targets if isinstance(n.target, cst.Name))
                elif isinstance(node, (cst.AnnAssign, cst.Param)):
                    target = node.target if isinstance(node, cst.AnnAssign) else node.name
                    annotation = node.annotation.annotation if node.annotation is not None else None
                    value = node.value if isinstance(node, cst.AnnAssign) else node.default
                    if isinstance(target, cst.Name) and (
                            (annotation is not None and "device" in self.code(annotation))
                            or (value is not None and _device_valued(value, self.ctx.qualify))):
                        names.add(target.value)
            found = self.ctx.state["fix:device-names"] = frozenset(names)
        return found

    def is_free(self, name: str) -> bool:
        """No binding of `name` anywhere in the file (the walk recorded them all): an added import
        cannot change what it means."""
        resolver = self.ctx.resolver
        return name not in resolver.import_targets and name not in resolver.local_names

    def imports(self) -> dict[str, str]:
        """Local name -> qualified name for the imports made at module level (also inside a
        module-level `if is_torch_available():` or `try:`, not under `if TYPE_CHECKING:` nor in an
        `except` fallback) of names the file binds nowhere else and never to anything else: such a
        name means that module wherever the file uses it."""
        if self._imports is None:
            resolver = self.ctx.resolver
            found: dict[str, str] = {}
            for small in _module_level_imports(self.module.body):
                for name, qualified in _import_bindings(small):
                    if (qualified is not None and name not in resolver.local_names
                            and resolver.import_targets.get(name) == {qualified}):
                        found[name] = qualified
            self._imports = found
        return self._imports

    def references(self, qualified: tuple[str, ...] | list[str]) -> list[Reference]:
        """The catalogue references to these names that the file's findings come from."""
        wanted = set(qualified)
        found = []
        for _, _, fields in self.ctx.pending:
            ref = fields.get("__ref")
            if ref is not None and ref.qualified in wanted:
                found.append(ref)
        return found

    # -- the project's device (auditor/fix/device_owner.py) ------------------------------------------------
    def device_expr(self, index: str | None = None,
                    at: cst.CSTNode | None = None) -> tuple[str, list[NodeEdit]] | None:
        """The text of an expression for the project's device and the edits the file needs to
        reach it: `get_device()` with `from mypkg.device_choice import get_device` (and, when the
        fix run creates that module, a `CreateFile` edit). With `index` (the text of an int
        expression), the device of the same type at that index: `device_at(i)`, or
        `torch.device(get_device().type, i)` for a found owner without an index function.

        A file that imports torch only inside functions gets the import inside the function too,
        right before the statement holding `at` (pattern 12). None when no expression can be
        written here; `device_unavailable()` says why."""
        owner = self._device_owner()
        if owner is not None and owner.kind == "accelerator":
            return self._accelerator_device(index, at)
        if owner is None or self.device_unavailable() is not None:
            return None
        if index is not None and owner.index_function is not None:
            spelled = self._owner_name(owner, owner.index_function, at)
            if spelled is None:
                return None
            return f"{spelled[0]}({index})", spelled[1]
        spelled = self._owner_name(owner, owner.function, at)
        if spelled is None:
            return None
        text = spelled[0] if owner.kind == "constant" else f"{spelled[0]}()"
        if index is None:
            return text, spelled[1]
        device = self.name_for("torch.device")
        if device is None:
            return None
        kind = f"{text}.type" if owner.returns_device else f"{device[0]}({text}).type"
        return f"{device[0]}({kind}, {index})", _merged(spelled[1], device[1])

    def _accelerator_device(self, index: str | None, at: cst.CSTNode | None) -> tuple[str, list[NodeEdit]] | None:
        """`accelerator.device` (`fabric.device`, `self.accelerator.device`) where the object that owns the
        project's device certainly exists (auditor/fix/accelerator_scope.py); with an index, the device of
        its type there. None elsewhere: the tie keeps the owner's reason."""
        found = accelerator_in_scope(at, self) if at is not None else None
        if found is None:
            return None
        if index is None:
            return f"{found}.device", []
        device = self.name_for("torch.device")
        return (f"{device[0]}({found}.device.type, {index})", device[1]) if device is not None else None

    def device_type_expr(self, at: cst.CSTNode | None = None) -> tuple[str, list[NodeEdit]] | None:
        """The project's device type as a string (`get_device().type`: "cuda" on NVIDIA), for the
        places that take a type (`autocast(device_type=...)`, `GradScaler(...)`) or a stored string
        (`device = "cuda"`, which other code may compare with strings). None as for `device_expr`."""
        found = self.device_expr(at=at)
        owner = self._device_owner()
        if found is None or owner is None:
            return None
        text, edits = found
        if owner.returns_device:
            return f"{text}.type", edits
        device = self.name_for("torch.device")
        if device is None:
            return None
        return f"{device[0]}({text}).type", _merged(edits, device[1])

    def device_unavailable(self) -> str | None:
        """Why `device_expr()` gives nothing in this file (a reason for `FixPlan.held`), or None."""
        owner = self._device_owner()
        if owner is None:
            return "no place chooses the project's device (only `audit --fix` finds or creates one)"
        if owner.kind == "accelerator":
            return owner.reason
        facts = self.ctx.facts
        here = facts.root_path if facts is not None else ""
        if here == owner.path:
            return "this file is where the project chooses its device"
        if facts is not None and facts.test and not owner.fix_tests:
            return "test code: left as it is (`--fix-tests` rewrites it too)"
        if owner.script and self._folder_owner(owner) is None:
            return (f"the device module {owner.path} is a script-level module, importable only from files beside it "
                    f"and from the packages there (this one is in another folder, whose module names are taken or "
                    f"whose packaging file installs this package, run from anywhere)")
        beside = os.path.dirname(here) == os.path.dirname(owner.folder)  # a script next to the package's folder
        if not owner.script and not beside and not self._reaches_package(owner.module.split(".", 1)[0]):
            return (f"this file is outside the package `{owner.module.split('.', 1)[0]}` and does not import it "
                    f"(vendored or standalone code): the device module {owner.path} may not be importable here")
        return None

    def device_known(self) -> bool:
        """Whether this run knows the project's device owner (`audit --fix`; a plain scan does not)."""
        return self._device_owner() is not None

    def device_applicability(self) -> str:
        """A rewrite to the owner keeps the program's meaning on an NVIDIA machine (`safe`) when the
        owner is the module audit writes (it picks CUDA there, without an index); through a helper of
        the project's own it is `unsafe`: its answer on NVIDIA is its own."""
        owner = self._device_owner()
        return "safe" if owner is not None and owner.ours else "unsafe"

    def _reaches_package(self, top: str) -> bool:
        """The file is in the package `top`, or imports it (an example of the library, a test of it).
        (A script beside the package's folder reaches it too: see device_unavailable.)"""
        facts = self.ctx.facts
        if facts is not None and facts.package.split(".", 1)[0] == top:
            return True
        return any(t == top or t.startswith(top + ".")
                   for targets in self.ctx.resolver.import_targets.values() for t in targets)

    def _device_owner(self) -> DeviceOwner | None:
        """The owner this file imports: the project's, or for a script repository the module beside
        this file's folder of scripts (DeviceOwner.for_folder)."""
        facts = self.ctx.facts
        owner = facts.device_owner if facts is not None else None
        if owner is None or not owner.script or not owner.beside:
            return owner
        return self._folder_owner(owner) or owner

    def _folder_owner(self, owner: DeviceOwner) -> DeviceOwner | None:
        """The script-level module a file here reaches: beside it, or beside the top folder of its package."""
        facts = self.ctx.facts
        here = facts.root_path if facts is not None else ""
        folder, package = os.path.dirname(here), False
        if facts is not None and facts.package:
            parts, top = here.split("/"), facts.package.split(".", 1)[0]
            if top in parts[:-1]:
                folder, package = "/".join(parts[:parts.index(top)]), True
        return owner.for_folder(folder, package)

    def _owner_name(self, owner: DeviceOwner, name: str, at: cst.CSTNode | None) -> tuple[str, list[NodeEdit]] | None:
        """`name` of the owner's module as this file can write it, and the edits that import it."""
        qualified = f"{owner.module}.{name}"
        for local, bound in self.imports().items():
            if bound == qualified:
                return local, []  # already imported (a second round, or the user's own import)
        if not self.is_free(name):
            return None  # the file binds that name to something else
        line = f"from {owner.module} import {name}"
        created = [CreateFile.of(owner.path, owner.content)] if owner.created else []
        statement = self._function_statement(at)
        if self._torch_at_top() or (statement is None and not self._imports_torch_anywhere()):
            return name, [self.add_import(line), *created]
        if statement is None:
            return None  # torch is imported lazily (or optionally) and this use is not inside a function
        newline = self.newline
        return name, [NodeEdit(Pos(statement, "start"), Pos(statement, "start"),
                               lambda indent: f"{line}{newline}{indent}"), *created]

    def _torch_at_top(self) -> bool:
        """An `import torch...` / `from torch... import` statement straight in the module's body: the
        module needs torch when imported, so importing the device module at its top changes nothing.
        Otherwise (torch imported in functions, under `if is_torch_available():`, `try:` or
        `if TYPE_CHECKING:`), the device module is imported where it is used (pattern 12)."""
        found = self.ctx.state.get("fix:torch-at-top")
        if found is None:
            found = any(isinstance(statement, cst.SimpleStatementLine) and any(
                (qualified or "").split(".")[0] == "torch" for small in statement.body for _, qualified in
                (_import_bindings(small) if isinstance(small, (cst.Import, cst.ImportFrom)) else ()))
                for statement in self.module.body)
            self.ctx.state["fix:torch-at-top"] = found
        return found

    def _imports_torch_anywhere(self) -> bool:
        return any(t == "torch" or t.startswith("torch.")
                   for targets in self.ctx.resolver.import_targets.values() for t in targets)

    def _function_statement(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        """The statement line holding `node`, when it stands directly in a function's block."""
        statement = self.statement_of(node) if node is not None else None
        if isinstance(statement, cst.BaseSmallStatement):
            statement = self.parent(statement)
        if not isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None
        current = self.parent(statement)
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            current = self.parent(current)
        block = self.parent(statement)
        return statement if isinstance(current, cst.FunctionDef) and isinstance(block, cst.IndentedBlock) else None

    # -- names and imports ------------------------------------------------------------------------------
    def name_for(self, qualified: str, from_import: bool = False,
                 site: Reference | None = None) -> tuple[str, list[NodeEdit]] | None:
        """How to write `qualified` in this file, and the import edit that makes it reachable.

        At the `site` of a reference (`th.cuda.synchronize`), its own head name is used when it
        reaches `qualified` (`th.accelerator.synchronize`): the walker resolved it right there.
        Otherwise the longest qualified name a module-level import binds wins
        (`dist.get_default_backend_for_device` under `import torch.distributed as dist`), so the
        user's aliases are kept; else `import torch` is added (or `from M import N` when
        `from_import`), provided nothing in the file uses that name for something else. None when
        no safe spelling exists."""
        if site is not None and not from_import:
            spelled = _through_head(site, qualified)
            if spelled is not None:
                return spelled, []
        bindings = self.imports()
        best: tuple[str, str] | None = None
        for local, bound in bindings.items():
            if (qualified == bound or qualified.startswith(bound + ".")) and (best is None or len(bound) > len(best[1])):
                if from_import and bound != qualified:
                    continue
                best = (local, bound)
        if best is not None:
            return best[0] + qualified[len(best[1]):], []
        if from_import:
            module, _, name = qualified.rpartition(".")
            if module and self.is_free(name):
                return name, [self.add_import(f"from {module} import {name}")]
            return None
        top = qualified.split(".", 1)[0]
        if self.is_free(top) and not self._imported_lazily(top, bindings):
            return qualified, [self.add_import(f"import {top}")]
        return None

    def _imported_lazily(self, top: str, bindings: dict[str, str]) -> bool:
        """The file imports `top` (or a module below it) only inside functions or branches: an
        `import top` added at its top would make the lazy import eager (an optional dependency
        then fails the module's import, and import time grows)."""
        if any(bound == top or bound.startswith(top + ".") for bound in bindings.values()):
            return False
        return any(t == top or t.startswith(top + ".")
                   for targets in self.ctx.resolver.import_targets.values() for t in targets)

    def add_import(self, line: str) -> NodeEdit:
        """Insert `line` after the file's leading docstring, `__future__` and import statements."""
        body = self.module.body
        anchor = None
        for index, statement in enumerate(body):
            if not isinstance(statement, cst.SimpleStatementLine):
                break
            small = statement.body
            leading = (index == 0 and len(small) == 1 and isinstance(small[0], cst.Expr)
                       and isinstance(small[0].value, (cst.SimpleString, cst.ConcatenatedString)))
            if not leading and not all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small):
                break
            anchor = statement
        text = line + self.newline
        if anchor is not None:
            return NodeEdit(Pos(anchor, "line-after"), Pos(anchor, "line-after"), text)
        if body:
            return NodeEdit(Pos(body[0], "line-start"), Pos(body[0], "line-start"), text)
        return NodeEdit(Pos(None), Pos(None), text)

    # -- edits ------------------------------------------------------------------------------------------------
    @staticmethod
    def replace(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(Pos(node, "start"), Pos(node, "end"), text)

    @staticmethod
    def insert_before(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(Pos(node, "start"), Pos(node, "start"), text)

    @staticmethod
    def insert_after(node: cst.CSTNode, text: str) -> NodeEdit:
        return NodeEdit(Pos(node, "end"), Pos(node, "end"), text)

    def append_args(self, call: cst.Call, text: str) -> NodeEdit:
        """`f(a)` -> `f(a, text)`; `f()` -> `f(text)` (a trailing comma stays where it was)."""
        if call.args:
            return self.insert_after(call.args[-1], ", " + text)
        return NodeEdit(Pos(call.func, "end"), Pos(call, "end"), "(" + text + ")")

    def prepend_args(self, call: cst.Call, text: str) -> NodeEdit:
        """`f(a)` -> `f(text, a)`; `f()` -> `f(text)`."""
        if call.args:
            return self.insert_before(call.args[0], text + ", ")
        return NodeEdit(Pos(call.func, "end"), Pos(call, "end"), "(" + text + ")")

    def remove_arg(self, call: cst.Call, arg: cst.Arg) -> NodeEdit:
        """Delete one argument with the comma that joins it to its neighbour."""
        args = list(call.args)
        index = next(i for i, a in enumerate(args) if a is arg)
        if index + 1 < len(args):
            return NodeEdit(Pos(arg, "start"), Pos(args[index + 1], "start"), "")
        if index > 0:
            return NodeEdit(Pos(args[index - 1], "end"), Pos(arg, "end"), "")
        return NodeEdit(Pos(call.func, "end"), Pos(call, "end"), "()")

    def lone_statement(self, expression: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line whose only statement is `expression` as an expression statement, when
        it stands in an indented block or the module (so a line can go before it)."""
        expr = self.parent(expression)
        if not isinstance(expr, cst.Expr):
            return None
        line = self.parent(expr)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        block = self.parent(line)
        return line if isinstance(block, (cst.IndentedBlock, cst.Module)) else None

    def guard(self, statement: cst.SimpleStatementLine, condition: str) -> NodeEdit:
        """Put `statement` under `if condition:` (it keeps its line; the `if` goes before it)."""
        newline, unit = self.newline, self.indent_unit
        return NodeEdit(Pos(statement, "start"), Pos(statement, "start"),
                        lambda indent: f"if {condition}:{newline}{indent}{unit}")

    def delete_statement(self, statement: cst.SimpleStatementLine) -> NodeEdit:
        """Remove a statement's whole line(s), its trailing comment included."""
        return NodeEdit(Pos(statement, "line-start"), Pos(statement, "line-after"), "")


def _merged(first: list[NodeEdit], second: list[NodeEdit]) -> list[NodeEdit]:
    """Both lists of edits, an import line added by both only once."""
    seen = {edit.content for edit in first if isinstance(edit.content, str)}
    return [*first, *(edit for edit in second if not (isinstance(edit.content, str) and edit.content in seen))]


def _import_bindings(node: cst.CSTNode) -> list[tuple[str, str | None]]:
    """What an import statement binds: `import a.b` -> a=a, `import a.b as c` -> c=a.b,
    `from a import b as c` -> c=a.b; relative imports bind names of unknown meaning (None)."""
    found: list[tuple[str, str | None]] = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                found.append((alias.asname.name.value, full))
            else:
                top = full.split(".", 1)[0]
                found.append((top, top))
    elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        module = _dotted(node.module) if node.module is not None else None
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else None
            if name is None:
                continue
            local = alias.asname.name.value if (alias.asname is not None and isinstance(alias.asname.name, cst.Name)) else name
            found.append((local, f"{module}.{name}" if module and not node.relative else None))
    return found


def _module_level_imports(body) -> list[cst.BaseSmallStatement]:
    """Import statements that run when the module is imported (see Rewriter.imports)."""
    found: list[cst.BaseSmallStatement] = []
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            found.extend(s for s in statement.body if isinstance(s, (cst.Import, cst.ImportFrom)))
        elif isinstance(statement, cst.If):
            test = statement.test
            name = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else ""
            if name != "TYPE_CHECKING":
                found.extend(_module_level_imports(statement.body.body))
        elif isinstance(statement, (cst.Try, cst.With)):
            found.extend(_module_level_imports(statement.body.body))
    return found


def _through_head(ref: Reference, qualified: str) -> str | None:
    """`th.accelerator.x` for `qualified` torch.accelerator.x at a reference written `th.cuda.y`."""
    node = ref.call.func if ref.call is not None else ref.node
    parts = dotted_parts(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    names = ref.qualified.split(".")
    if not parts or len(parts) > len(names) or names[len(names) - len(parts) + 1:] != parts[1:]:
        return None
    head = ".".join(names[:len(names) - len(parts) + 1])  # what the first name stands for
    if qualified == head or qualified.startswith(head + "."):
        return parts[0] + qualified[len(head):]
    return None


def _dotted(node: cst.CSTNode) -> str | None:
    return dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


def _device_valued(value: cst.BaseExpression, qualify: Callable[[cst.CSTNode], str | None]) -> bool:
    """`torch.device(...)`, `x.device`, `torch.device(...) if c else ...`: a device object, not an index."""
    if isinstance(value, cst.IfExp):
        return _device_valued(value.body, qualify) or _device_valued(value.orelse, qualify)
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        # torch.device(...), and the project's device functions a previous round wrote (get_device, device_at)
        return qualify(func) == "torch.device" or name.endswith("_device") or name == "device_at"
    return isinstance(value, cst.Attribute) and value.attr.value == "device"


def int_like(node: cst.BaseExpression, devices: frozenset[str] = frozenset()) -> bool:
    """An argument that is an int (or None) by its looks: a literal, `int(...)`, `x.index`, or a
    name like `local_rank` / `gpu_id` / `device_idx` that is not one of `devices` (names the file
    binds to a device object: `gpu = torch.device("cuda", 0)` only looks like an index)."""
    if isinstance(node, cst.Name) and node.value in devices:
        return False
    if isinstance(node, cst.Integer) or (isinstance(node, cst.Name) and node.value == "None"):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "int":
        return True
    name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else ""
    name = name.lower()
    return name == "index" or any(hint in name for hint in _INT_NAME_HINTS)


# -- plans to text edits -------------------------------------------------------------------------------------
def anchor_nodes(plans: list[FixPlan]) -> list[cst.CSTNode]:
    return [pos.node for plan in plans for edit in plan.edits for pos in (edit.start, edit.end) if pos.node is not None]


class Placer:
    """Turns plans into `Fix`es once the spans of their nodes are known."""

    def __init__(self, text: str, spans: dict[int, tuple[int, int]]) -> None:
        self.text = text
        self.spans = spans
        self.index = LineIndex(text)

    def offset(self, pos: Pos) -> tuple[int, bool] | None:
        """(offset, whether a newline must precede inserted text: a line after the file's last)."""
        if pos.node is None:
            return len(self.text), not self.text.endswith(("\n", "\r")) and bool(self.text)
        span = self.spans.get(id(pos.node))
        if span is None:
            return None
        if pos.side == "start":
            return span[0], False
        if pos.side == "end":
            return span[1], False
        if pos.side == "line-start":
            return self.text.rfind("\n", 0, span[0]) + 1, False
        after = self.text.find("\n", span[1])
        return (len(self.text), bool(self.text)) if after < 0 else (after + 1, False)

    def indentation(self, offset: int) -> str:
        start = self.text.rfind("\n", 0, offset) + 1
        line = self.text[start:offset]
        return line[:len(line) - len(line.lstrip(" \t"))]

    def fix(self, plan: FixPlan) -> Fix | None:
        edits = []
        creates: list[NewFile] = []
        for edit in plan.edits:
            if isinstance(edit, CreateFile):
                if all(new.path != edit.path for new in creates):
                    creates.append(NewFile(edit.path, edit.content))  # type: ignore[arg-type]
                continue
            start, end = self.offset(edit.start), self.offset(edit.end)
            if start is None or end is None or end[0] < start[0]:
                return None
            content = edit.content(self.indentation(start[0])) if callable(edit.content) else edit.content
            if start[1] and start[0] == end[0]:
                content = ("\r\n" if "\r\n" in self.text else "\n") + content
            line, column = self.index.position(start[0])
            end_line, end_column = self.index.position(end[0])
            edits.append(Edit(line, column, end_line, end_column, content))
        edits.sort(key=lambda e: (e.line, e.column, e.end_line, e.end_column))  # stable: inserts keep their order
        return Fix(plan.applicability, plan.message, tuple(edits), plan.min_torch, plan.reason, tuple(creates))
