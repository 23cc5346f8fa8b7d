"""The catalogue-driven API swaps (`[[swap]]` rows of rules/fixes.toml): the fix every rule built
on the catalogue's `[[api]]` rows gets without code. A reference to `api` becomes `to`, spelled
through the file's own imports, with the argument reshaping and the guard the row asks for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from auditor.fix.plan import FixPlan, NodeEdit, Pos, Reported, Rewriter, int_like
from auditor.python.names import dotted_parts
from auditor.python.syntax import string_value
from auditor.python.tree import descendants

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue
    from auditor.context import Reference

GUARD = "torch.accelerator.is_available"


@dataclass(frozen=True)
class Swap:
    api: tuple[str, ...]
    to: str
    fix_id: str
    applicability: str
    gated: bool = False
    since: str | None = None
    refs: bool = False
    positional: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    args: str = ""
    max_args: int | None = None
    context: str = ""
    guard: str = ""
    otherwise: str | None = None
    idle: str | None = None
    display_same: bool = False
    all_calls: bool = False
    check: bool = False


_BUILT: dict[int, tuple[list, dict[str, Swap]]] = {}


def _swaps(catalogue: Catalogue) -> dict[str, Swap]:
    """The [[swap]] rows by API name, built once per catalogue."""
    rows = catalogue.table("fixes").get("swap", [])
    cached = _BUILT.get(id(rows))
    if cached is not None and cached[0] is rows:
        return cached[1]
    table: dict[str, Swap] = {}
    for row in rows:
        swap = Swap(api=tuple(row["api"]), to=row["to"], fix_id=row.get("fix", ""), applicability=row["class"],
                    gated=bool(row.get("gated")), since=row.get("since"), refs=bool(row.get("refs")),
                    positional=tuple(row.get("positional", ())), keywords=tuple(row.get("keywords", ())),
                    forbid=tuple(row.get("forbid", ())), args=row.get("args", ""), max_args=row.get("max_args"),
                    context=row.get("context", ""), guard=row.get("guard", ""), otherwise=row.get("otherwise"),
                    idle=row.get("idle"), display_same=bool(row.get("display_same")), all_calls=bool(row.get("all_calls")), check=bool(row.get("check")))
        for name in swap.api:
            table[name] = swap
    _BUILT[id(rows)] = (rows, table)
    return table


def swap_for(catalogue: Catalogue, qualified: str) -> Swap | None:
    return _swaps(catalogue).get(qualified)


def swaps_of_rule(catalogue: Catalogue, rule_name: str) -> list[Swap]:
    """The swaps whose APIs the catalogue gives to this rule, once each."""
    seen: dict[int, Swap] = {}
    for name, swap in _swaps(catalogue).items():
        entry = catalogue.lookup_api(name)
        if entry is not None and entry.rule == rule_name:
            seen.setdefault(id(swap), swap)
    return list(seen.values())


def swap_fix(report: Reported, rewriter: Rewriter) -> FixPlan | None:
    """The swap for a reported catalogue reference, when its row allows this use of it."""
    ref = report.ref
    if ref is None or ref.kind == "import":
        return None
    swap = swap_for(rewriter.ctx.catalogue, ref.qualified)
    if swap is None:
        return None
    patched = set(swap.api) & _patched(rewriter)
    if patched:
        return FixPlan.held(f"not rewritten: this file replaces `{min(patched)}` (a monkeypatch); the new call would "
                            "bypass the replacement", swap.fix_id)
    plan = _swap(swap, ref, rewriter)
    if plan is not None and swap.check and (mention := _guards_cuda(ref, rewriter)) is not None:
        plan.applicability = "display"
        plan.reason = (f"left as it is: the code this check decides names CUDA (`{mention}`), so it asks for "
                       "CUDA, not for any accelerator")
    return plan


def _swap(swap: Swap, ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    if ref.kind == "call" and ref.call is not None:
        return _call(swap, ref, rewriter)
    if swap.refs and not swap.guard and swap.otherwise is None and isinstance(ref.node, (cst.Name, cst.Attribute)):
        spelled = rewriter.name_for(swap.to, site=ref)
        if spelled is None:
            return None
        text, imports = spelled
        return _plan(swap, [rewriter.replace(ref.node, text), *imports], f"Replace with `{text}`")
    return None


def _call(swap: Swap, ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    call = ref.call
    args = list(call.args)
    held = _call_held(swap, call, args, rewriter)
    if held is not None:
        return FixPlan.held(f"not rewritten: {held}", swap.fix_id)
    spelled = rewriter.name_for(swap.to, site=ref)
    if spelled is None:
        return FixPlan.held(f"not rewritten: no import reaches `{swap.to}` here (the name `torch` means something "
                            "else here, or torch is imported only lazily)", swap.fix_id)
    text, imports = spelled
    edits: list[NodeEdit] = [rewriter.replace(call.func, text), *imports, *_reshape(swap, args, rewriter)]
    statement = rewriter.lone_statement(call) if swap.guard else None
    guarded = swap.guard == "statement" or (swap.guard == "when-statement" and statement is not None)
    idle = _idle_argument(swap, args)
    if guarded or swap.otherwise is not None or idle is not None:
        condition = rewriter.name_for(GUARD, site=ref)
        if condition is None:
            return None
        guard_text, guard_imports = condition
        edits += [edit for edit in guard_imports if edit.content not in {e.content for e in imports}]
        if guarded:
            if statement is None:
                return FixPlan.held(f"not rewritten: `{swap.to}` raises without an accelerator where the CUDA call did "
                                    "nothing, and the call is not a statement of its own that can go under `if "
                                    "torch.accelerator.is_available():` (a lambda, a one-line `if`, an expression)",
                                    swap.fix_id)
            if not _already_guarded(statement, rewriter):
                edits.append(rewriter.guard(statement, guard_text + "()"))
        elif swap.otherwise is not None:
            edits.append(rewriter.insert_before(call, "("))
            edits.append(rewriter.insert_after(call, f" if {guard_text}() else {swap.otherwise})"))
        if idle is not None:
            edits.append(rewriter.insert_after(idle, f" if {guard_text}() else {swap.idle}"))
    return _plan(swap, edits, _message(swap, text, guarded, idle is not None))


def _idle_argument(swap: Swap, args: list[cst.Arg]) -> cst.BaseExpression | None:
    """The argument that becomes `arg if torch.accelerator.is_available() else <idle>`: the new call
    raises without an accelerator for that argument, and the idle value makes it a no-op there (the
    CUDA call raised too, so nothing a CPU run did changes). None when there is nothing to wrap."""
    if swap.idle is None or len(args) != 1:
        return None
    value = args[0].value
    return None if isinstance(value, cst.Name) and value.value == swap.idle else value


def _patched(rewriter: Rewriter) -> frozenset[str]:
    """The qualified names this file assigns to: `torch.cuda.is_available = lambda: False`,
    `setattr(torch.cuda, "empty_cache", f)`, `monkeypatch.setattr(torch.cuda, "is_available", ...)`,
    `monkeypatch.setattr("torch.cuda.is_available", ...)`."""
    state = rewriter.ctx.state
    found = state.get("fix:patched")
    if found is None:
        names: set[str] = set()
        qualify = rewriter.ctx.qualify
        if "=" in rewriter.ctx.text or "setattr" in rewriter.ctx.text:
            for node in descendants(rewriter.module):
                targets: list[cst.CSTNode] = []
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
                    targets = [node.target]
                elif isinstance(node, cst.Call) and node.args and dotted_parts(node.func) \
                        and dotted_parts(node.func)[-1] == "setattr":
                    first = node.args[0].value
                    text = string_value(first)
                    if text is not None:
                        names.add(text)
                    elif len(node.args) > 1 and (attr := string_value(node.args[1].value)) is not None:
                        owner = qualify(first) if isinstance(first, (cst.Name, cst.Attribute)) else None
                        if owner:
                            names.add(f"{owner}.{attr}")
                for target in targets:
                    if isinstance(target, cst.Attribute) and (qualified := qualify(target)):
                        names.add(qualified)
        found = state["fix:patched"] = frozenset(names)
    return found


def _call_held(swap: Swap, call: cst.Call, args: list[cst.Arg], rewriter: Rewriter) -> str | None:
    """Why the row does not allow this call, or None."""
    if any(arg.star for arg in args):
        return "unpacked arguments (`*args`/`**kwargs`) may hold what the new call takes differently"
    if swap.max_args is not None and len(args) > swap.max_args:
        return f"`{swap.to}` takes at most {swap.max_args} argument{'s' if swap.max_args != 1 else ''}"
    forbidden = next((a.keyword.value for a in args if a.keyword is not None and a.keyword.value in swap.forbid), None)
    if forbidden is not None:
        return f"`{forbidden}=` has no counterpart in `{swap.to}`"
    if swap.args == "int" and not all(int_like(arg.value, rewriter.device_names()) for arg in args):
        return f"`{swap.to}` takes a device index (an int), and the argument is not known to be one"
    if swap.keywords and sum(arg.keyword is None for arg in args) > len(swap.keywords):
        return f"more positional arguments than `{swap.to}` takes"
    if swap.context == "with" and not isinstance(rewriter.parent(call), cst.WithItem):
        return "only the item of a `with` statement is rewritten (this call is stored or passed)"
    if swap.all_calls and not _all_calls(swap, rewriter):
        return "another reference to it in this file is not a call (an `isinstance` check would stop matching)"
    return None


def _reshape(swap: Swap, args: list[cst.Arg], rewriter: Rewriter) -> list[NodeEdit]:
    """Keywords that must become positional lose their `name=`; positionals that must become
    keywords gain one."""
    edits = []
    position = 0
    for arg in args:
        if arg.keyword is not None:
            if arg.keyword.value in swap.positional:
                edits.append(NodeEdit(Pos(arg, "start"), Pos(arg.value, "start"), ""))
        elif swap.keywords:  # _call checked there are no more positionals than keywords
            edits.append(rewriter.insert_before(arg.value, swap.keywords[position] + "="))
            position += 1
    return edits


def _already_guarded(statement: cst.SimpleStatementLine, rewriter: Rewriter) -> bool:
    """The statement is the body of `if torch.accelerator.is_available():` (or the CUDA check a
    gated fix turns into one): no second guard."""
    block = rewriter.parent(statement)
    branch = rewriter.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(branch, cst.If) or not isinstance(branch.test, cst.Call):
        return False
    parts = dotted_parts(branch.test.func)
    if not parts or parts[-1] != "is_available":
        return False
    qualified = rewriter.ctx.qualify(branch.test.func) or ""
    return qualified in (GUARD, "torch.cuda.is_available")


_CUDA_WORD = re.compile(r"cuda|nvidia|cudnn|nccl", re.IGNORECASE)


def _guards_cuda(ref: Reference, rewriter: Rewriter) -> str | None:
    """What names CUDA in the branch a CUDA check decides (`if torch.cuda.is_available(): from
    executorch.backends.cuda import ...` / `raise RuntimeError("CUDA is not available")`), leaving
    out the torch.cuda calls and `.cuda()` there (findings of their own, fixed or holding the file
    back through the gate). None when the check decides nothing that names CUDA."""
    stated = _stated(ref, rewriter)
    if stated:  # `assert torch.cuda.is_available(), "requires CUDA"`, `skipif(..., reason="requires CUDA")`
        found = _CUDA_WORD.search(" ".join(rewriter.code(n) for n in stated))
        if found is not None:
            return " ".join(rewriter.code(stated[0]).split())[:80]
    node, parent = rewriter.decider(ref.node)
    if not isinstance(parent, (cst.If, cst.IfExp, cst.While)) or node is not parent.test:
        return None
    if id(parent) not in rewriter.decided:  # the same for every check in the test
        rewriter.decided[id(parent)] = _cuda_in_branches(parent, rewriter)
    return rewriter.decided[id(parent)]


_STATED_DEPTH = 8  # a bounded climb: a chain of n checks must not cost n * n (issue 20, D7)


def _stated(ref: Reference, rewriter: Rewriter) -> list[cst.CSTNode]:
    """The messages a CUDA check is stated with: an assert's message, or the text arguments beside
    it in the call it is an argument of (a skip's reason)."""
    node: cst.CSTNode = ref.node
    parent = rewriter.parent(node)
    for _ in range(_STATED_DEPTH):
        if parent is None or isinstance(parent, (cst.If, cst.IfExp, cst.While, cst.BaseStatement)):
            break
        if isinstance(parent, cst.Assert):
            return [parent.msg] if node is parent.test and parent.msg is not None else []
        if isinstance(node, cst.Arg) and isinstance(parent, cst.Call):
            return [a.value for a in parent.args if a is not node and _is_text(a.value)]
        node, parent = parent, rewriter.parent(parent)
    return []


def _cuda_in_branches(parent: cst.If | cst.IfExp | cst.While, rewriter: Rewriter) -> str | None:
    branches = [parent.body, parent.orelse] if not isinstance(parent, cst.While) else [parent.body]
    code = "".join(rewriter.code(b) for b in branches if b is not None)
    heads = [name for name, targets in rewriter.ctx.resolver.import_targets.items()
             if any(t == "torch" or t.startswith("torch.") for t in targets)]
    if heads:
        code = re.sub(rf"\b(?:{'|'.join(map(re.escape, heads))})(?:\.\w+)*", "", code)
    code = re.sub(r"\.cuda\(", "(", code)
    found = _CUDA_WORD.search(code)
    if found is None:
        return None
    start = max(code.rfind("\n", 0, found.start()) + 1, found.start() - 40)
    return code[start:found.end() + 40].strip().split("\n")[0][:80]


def _is_text(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))


def _all_calls(swap: Swap, rewriter: Rewriter) -> bool:
    """Every reference to the API that the file's findings point at is a call."""
    refs = rewriter.references(swap.api)
    return all(ref.kind in ("call", "import") for ref in refs)


def _message(swap: Swap, text: str, guarded: bool, idle: bool = False) -> str:
    if idle:
        return f"Replace with `{text}(i if torch.accelerator.is_available() else {swap.idle})`"
    if guarded:
        return f"Replace with `{text}(...)` under `if torch.accelerator.is_available():`"
    if swap.otherwise is not None:
        return f"Replace with `({text}(...) if torch.accelerator.is_available() else {swap.otherwise})`"
    return f"Replace with `{text}(...)`"


def _plan(swap: Swap, edits: list[NodeEdit], message: str) -> FixPlan:
    return FixPlan(swap.applicability, message, edits, swap.since, swap.gated, swap.fix_id, display_same=swap.display_same)
