"""A CUDA device value (`"cuda"`, `"cuda:0"`, `f"cuda:{rank}"`, `torch.device("cuda", i)`) rewritten
to the project's one device choice (auditor/fix/device_owner.py, `Rewriter.device_expr`).

Each rewrite keeps the value the program had on an NVIDIA machine:
- where torch takes a device (`torch.device(...)` itself, `.to(...)`, `device=` / `map_location=` /
  `output_device=` of a torch API): the device object, `get_device()` or `device_at(i)`, which is
  `torch.device("cuda")` / `torch.device("cuda", i)` there;
- anywhere else (a variable, a default, a dict entry, `device_map=`, a parameter of the project's
  own function): the same string, `get_device().type` ("cuda") or `str(device_at(i))` ("cuda:i"),
  since other code may compare it with strings (`torch.device("cuda") == "cuda"` is False).
Code evaluated when a package module is imported (a parameter default, a class attribute, a
package module's top level) is rewritten as unsafe: the device would then be probed at import.
Left as they are, with the reason: comparisons (they state a requirement or ask which device, they
do not choose one: pattern 11), `choices=` lists and the default they constrain, dict entries (a
`device_map` dict places parts of a model), pinned-memory devices, and device strings built in
other ways."""

from __future__ import annotations

import re

import libcst as cst

from auditor.fix.plan import FixPlan, NodeEdit, Pos, Rewriter
from auditor.python.syntax import string_value

FIX_ID = "F41"
_OBJECT_KEYWORDS = ("device", "map_location", "output_device")  # of torch APIs, which take a torch.device
_MISSING = object()


def device_fix(node: cst.CSTNode, rewriter: Rewriter) -> FixPlan | None:
    """The rewrite of the CUDA device value `node` (None when the run knows no device owner)."""
    index = device_index(node, rewriter)
    if index is _MISSING:
        return FixPlan.held("not rewritten: the device string is built in a way the rewrite does not read "
                            "(write it as \"cuda:N\" or f\"cuda:{i}\")", FIX_ID)
    if isinstance(index, str) and not index.isdigit() and not index.startswith("int("):
        index = f"int({index})"  # f"cuda:{rank}" also takes a string rank (os.environ["LOCAL_RANK"]); an index does not
    held = _not_a_choice(node, rewriter) or _implements_cuda(node, rewriter)
    if held is not None:
        return FixPlan.held(f"not rewritten: {held}", FIX_ID)
    arg = rewriter.parent(node)
    call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
    if isinstance(call, cst.Call) and isinstance(arg, cst.Arg):
        whole = _device_call(call, arg, index, rewriter)
        if whole is not None:
            return whole
        if _takes_device_object(call, arg, rewriter):
            return _plan(node, rewriter.device_expr(index, at=node), rewriter)
    if index is None:
        return _plan(node, rewriter.device_type_expr(at=node), rewriter)
    found = rewriter.device_expr(index, at=node)
    return _plan(node, (f"str({found[0]})", found[1]) if found is not None else None, rewriter)


def device_index(node: cst.CSTNode, rewriter: Rewriter) -> str | None | object:
    """The index text of a CUDA device value: None for "cuda", "0" for "cuda:0", "rank" for
    f"cuda:{rank}" (also "cuda:%d" % rank, "cuda:" + str(rank), "cuda:{}".format(rank)); _MISSING
    when it cannot be read."""
    value = string_value(node)
    if value is not None:
        _, _, index = value.partition(":")
        return index or None
    if isinstance(node, cst.FormattedString) and len(node.parts) == 2:
        part = node.parts[1]
        if isinstance(part, cst.FormattedStringExpression) and part.conversion is None and part.format_spec is None:
            return rewriter.code(part.expression)
    if isinstance(node, cst.BinaryOperation) and string_value(node.left) == "cuda:":
        right = node.right
        if isinstance(node.operator, cst.Add) and isinstance(right, cst.Call) and len(right.args) == 1 \
                and isinstance(right.func, cst.Name) and right.func.value == "str":
            return rewriter.code(right.args[0].value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) \
            and string_value(node.left) == "cuda:%d" and not isinstance(node.right, cst.Tuple):
        return rewriter.code(node.right)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and string_value(node.func.value) == "cuda:{}" \
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        return rewriter.code(node.args[0].value)
    return _MISSING


def _not_a_choice(node: cst.CSTNode, rewriter: Rewriter) -> str | None:
    """Why this "cuda" is not a device choice the rewrite may move, or None."""
    parent = rewriter.parent(node)
    while isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set, cst.ComparisonTarget, cst.Comparison,
                              cst.UnaryOperation, cst.BooleanOperation, cst.DictElement)):
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return "a comparison states a requirement or asks which device is used; it does not choose one"
        if isinstance(parent, cst.DictElement):
            return "an entry of a dict (a device map placing parts of a model, a configuration): left as it is"
        if isinstance(parent, (cst.List, cst.Tuple, cst.Set)):
            return "one of several devices listed (`choices=`, a supported set): not the one in use"
        parent = rewriter.parent(parent)
    call = rewriter.parent(parent) if isinstance(parent, cst.Arg) else None
    pinning = isinstance(call, cst.Call) and (
        (isinstance(call.func, cst.Attribute) and call.func.attr.value in ("pin_memory", "is_pinned"))
        or (parent.keyword is not None and parent.keyword.value == "pin_memory_device"))
    if pinning:
        return "the device of pinned memory is a deprecated argument (pinning follows the current accelerator)"
    if isinstance(call, cst.Call) and parent.keyword is not None and parent.keyword.value == "default" \
            and any(a.keyword is not None and a.keyword.value == "choices" for a in call.args):
        return "the option's `choices=` list the devices a user may pick: the default must stay one of them"
    return None


def _implements_cuda(node: cst.CSTNode, rewriter: Rewriter) -> str | None:
    """Inside `def cuda(...)`: the code implements CUDA placement (`Int8Params.cuda`), so "cuda" is its meaning."""
    current = rewriter.parent(node)
    while current is not None:
        if isinstance(current, cst.FunctionDef) and current.name.value == "cuda":
            return "inside `def cuda()`: this code implements moving to CUDA, so \"cuda\" is what it means"
        current = rewriter.parent(current)
    return None


def _device_call(call: cst.Call, arg: cst.Arg, index: str | None, rewriter: Rewriter) -> FixPlan | None:
    """`torch.device("cuda")` -> `get_device()`, `torch.device("cuda:1")` / `torch.device("cuda", i)` ->
    `device_at(...)`: the whole call, which already is a device object."""
    if rewriter.ctx.qualify(call.func) != "torch.device" or arg is not call.args[0] or arg.keyword is not None:
        return None
    rest = call.args[1:]
    if len(rest) > 1 or any(a.star or (a.keyword is not None and a.keyword.value != "index") for a in rest):
        return FixPlan.held("not rewritten: an unusual `torch.device(...)` call", FIX_ID)
    if rest and index is not None:
        return None  # torch.device("cuda:0", 1) raises anyway
    if rest:
        index = rewriter.code(rest[0].value)
    return _plan(call, rewriter.device_expr(index, at=call), rewriter)


def _takes_device_object(call: cst.Call, arg: cst.Arg, rewriter: Rewriter) -> bool:
    """`.to("cuda")`, a torch function's device position, `device=` / `map_location=` of a torch API."""
    table = rewriter.ctx.catalogue.table("device")
    func = call.func
    qualified = rewriter.ctx.qualify(func) or ""
    if arg.keyword is None:
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and call.args[0] is arg:
            return not _own_to(rewriter)  # a class of this file with its own `to()` may want the string
        if qualified in table.get("type_functions", ()):
            return False  # init_device_mesh("cuda", ...) takes a device type: the string form
        position = table.get("device_functions", {}).get(qualified)
        positional = [a for a in call.args if a.keyword is None]
        return position is not None and position < len(positional) and positional[position] is arg
    return arg.keyword.value in _OBJECT_KEYWORDS and qualified.startswith("torch.")


def _at_import(node: cst.CSTNode, rewriter: Rewriter) -> bool:
    """Evaluated when a module of a package is imported: a parameter default or a class attribute
    anywhere, module-level code in a package module (a script's top level is the program itself)."""
    current, parent = node, rewriter.parent(node)
    while parent is not None:
        if isinstance(parent, cst.FunctionDef):
            return isinstance(current, (cst.Parameters, cst.Decorator)) or current is parent.returns
        if isinstance(parent, cst.ClassDef):
            return True
        current, parent = parent, rewriter.parent(parent)
    facts = rewriter.ctx.facts
    return bool(facts is not None and facts.package)


_OWN_TO = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+to[ \t]*\(", re.MULTILINE)


def _own_to(rewriter: Rewriter) -> bool:
    state = rewriter.ctx.state
    if "LK101:own-to" not in state:
        state["LK101:own-to"] = _OWN_TO.search(rewriter.ctx.text) is not None
    return state["LK101:own-to"]


def _plan(node: cst.CSTNode, found: tuple[str, list] | None, rewriter: Rewriter, fix_id: str = FIX_ID,
          edits: list[NodeEdit] | None = None) -> FixPlan | None:
    """The rewrite of `node` to `found` (its text and the imports it needs), or why there is none;
    `edits`, when given, make the text instead of a replacement of the whole node."""
    if found is None:
        reason = rewriter.device_unavailable()
        return FixPlan.held(f"not rewritten: {reason}", fix_id) if reason else FixPlan.held(
            "not rewritten: the project's device cannot be imported here (a name it needs is taken)", fix_id)
    text, imports = found
    applicability = rewriter.device_applicability()
    message = f"Replace with `{text}` (the project's device)"
    if _at_import(node, rewriter):
        applicability = "unsafe"  # the same device on NVIDIA, but probed when the module is imported
        message += "; evaluated when the module is imported, it probes the device then"
    own = edits if edits is not None else [rewriter.replace(node, text)]
    return FixPlan.to_device(applicability, message, [*own, *imports], fix_id)


# -- an int device (int-device-index, LK107): the index kept, the device type the project's ------------
INDEX_FIX_ID = "F44"
_HOLE = "\x00"  # where the index goes in the owner's expression for a device at an index


def index_device_fix(node: cst.CSTNode, rewriter: Rewriter) -> FixPlan | None:
    """`.to(i)` / `device=i` -> `device_at(i)`, `torch.device(i)` -> `device_at(i)`, DDP's `device_ids=[i]` /
    `output_device=i` -> `... if get_device().type != "cpu" else None` (DDP of a CPU module takes none).

    On NVIDIA each is what the int was (`cuda:i`; the same indexes for DDP). The edits only insert text
    around the index (or replace `torch.device(` and `)`), so a rewrite inside it (`torch.cuda.current_device()`)
    stays a separate edit."""
    arg = rewriter.parent(node)
    call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or not isinstance(arg, cst.Arg):
        return None
    if arg.keyword is not None and arg.keyword.value in ("device_ids", "output_device"):
        found = rewriter.device_type_expr(at=node)
        if found is None:
            return _plan(node, None, rewriter, INDEX_FIX_ID)
        text, imports = found
        tail = f' if {text} != "cpu" else None'
        return _plan(node, (rewriter.code(node) + tail, imports), rewriter, INDEX_FIX_ID,
                     [rewriter.insert_after(node, tail)])
    found = rewriter.device_expr(_HOLE, at=node)
    if found is None:
        return _plan(node, None, rewriter, INDEX_FIX_ID)
    text, imports = found
    before, _, after = text.partition(_HOLE)
    index = rewriter.code(node)
    whole = rewriter.ctx.qualify(call.func) == "torch.device" and len(call.args) == 1 and arg.keyword is None
    if whole:  # torch.device(i): the call itself becomes the owner's device
        edits = [NodeEdit(Pos(call, "start"), Pos(node, "start"), before),
                 NodeEdit(Pos(node, "end"), Pos(call, "end"), after)]
        return _plan(call, (before + index + after, imports), rewriter, INDEX_FIX_ID, edits)
    edits = [rewriter.insert_before(node, before), rewriter.insert_after(node, after)]
    return _plan(node, (before + index + after, imports), rewriter, INDEX_FIX_ID, edits)
