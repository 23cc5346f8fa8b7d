from __future__ import annotations

import re

import libcst as cst

from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.fix.plan import FixPlan, NodeEdit, Pos, Reported, Rewriter, int_like
from auditor.model import Category, Severity

_KEPT_KEYWORDS = ("non_blocking", "memory_format")  # what Tensor.to takes too


class CudaMethodCall(Rule):
    code = "LK102"
    name = "cuda-method-call"
    category = Category.DEVICE
    severity = Severity.MAJOR
    subject = "`.cuda()`"
    message = "`.cuda()` moves this tensor or module to a CUDA device: it raises on {raising_targets}."
    suggestion = "`.to(DEVICE)` with one central device, e.g. `.to(torch.accelerator.current_accelerator())`."
    min_torch = "2.7"
    tokens = (".cuda",)
    what = "Finds `.cuda()`, `.cuda(i)` and `.cuda(non_blocking=True)` calls on tensors and modules."
    why = ("`.cuda()` is the commonest crash when a model moves off NVIDIA: on TPU, Trainium, MPS, XPU and CPU "
           "builds it raises \"Torch not compiled with CUDA enabled\". ROCm builds accept it.")
    instead = ("```python\nDEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")\n"
               "model = model.to(DEVICE)\nbatch = batch.to(DEVICE, non_blocking=True)\n```\n\n"
               "`.to(torch.accelerator.current_accelerator())` also works: on a CPU-only build it is `.to(None)`, "
               "which returns the tensor unchanged (torch 2.7+). `.cuda(i)` becomes `.to(torch.device(DEVICE.type, i))`.")

    VALID = [
        Valid("model.to(device)\nx = x.to(DEVICE, non_blocking=True)\n"),
        Valid("if args.cuda:\n    pass\nuse_cuda = x.is_cuda\n"),
        # another object's `cuda` method (HQQ's quantizer): no torch `.cuda()` takes these arguments
        Valid("w = self.quantizer.cuda(qtensor, meta=meta, device=self.keys.device)\n"),
        Valid('def f(cuda):\n    return cuda\n# model.cuda()\nprint("call .cuda() to move")\n'),
        Valid("class M(torch.nn.Module):\n    def cuda(self, device=None):\n        out = super().cuda(device=device)\n"
              "        self.moved = True\n        return out\n"),
    ]
    INVALID = [
        Invalid("model = Net().cuda()\n", line=1),
        Invalid("x = x.cuda(non_blocking=True)\n", line=1),
        Invalid("x = x.cuda(device=rank, non_blocking=True, memory_format=fmt)\n", line=1),  # trap: torch's own keywords
        Invalid("batch = [t.cuda(rank) for t in batch]\n", line=1),
        Invalid("net = torch.nn.DataParallel(model).cuda()\n", line=1),
        Invalid("t = (\n    torch.empty(3)\n    .random_(0, 2)\n    .cuda()\n)\n", line=4),
        # Fixes. A plain scan offers F23 (unsafe, only in a CUDA-clean file); `audit --fix` knows the project's
        # device owner (here none: it creates device_choice.py beside the script) and applies F40 (safe).
        Invalid("import torch\nmodel = Net().cuda()\nx = x.cuda(non_blocking=True)\n", line=2, fix_class="unsafe",
                fixed="import torch\nfrom device_choice import get_device\nmodel = Net().to(get_device())\n"
                      "x = x.to(get_device(), non_blocking=True)\n"),
        Invalid("import torch as th\nt = (\n    th.empty(3)\n    .cuda()\n)\n", line=4,
                fixed="import torch as th\nfrom device_choice import get_device\nt = (\n    th.empty(3)\n"
                      "    .to(get_device())\n)\n"),
        Invalid('"""Model."""\nmodel = Net().cuda()\n', line=2,
                fixed='"""Model."""\nfrom device_choice import get_device\nmodel = Net().to(get_device())\n'),
        # An index keeps its index (the same device on NVIDIA): `.to(device_at(i))`.
        Invalid("batch = [t.cuda(rank) for t in batch]\nm = m.cuda(device=1)\n", line=1,
                fixed="from device_choice import device_at\nbatch = [t.to(device_at(rank)) for t in batch]\n"
                      "m = m.to(device_at(1))\n"),
        # A "cuda" left in the file blocks F23, not F40 (it removes a raising tie itself).
        Invalid('import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device="cuda")\n', line=2,
                fix_class="display", fixed='import torch\nfrom device_choice import get_device\n'
                                           'model = Net().to(get_device())\nx = torch.zeros(3, device="cuda")\n'),
        # Left alone: an argument that may be a device object, not an index.
        Invalid('import torch\ngpu = torch.device("cuda", 1)\nm = m.cuda(gpu)\n', line=3, fixed=UNCHANGED),
        Invalid("from .utils import is_torch_available\nif is_torch_available():\n    import torch\n\n"
                "def place(m):\n    return m.cuda()\n", line=6,
                fixed="from .utils import is_torch_available\nif is_torch_available():\n    import torch\n\n"
                      "def place(m):\n    from device_choice import get_device\n    return m.to(get_device())\n"),
        # Left alone: a storage's `.cuda()`; any `.cuda()` in a file whose class defines its own `cuda()`.
        Invalid("import torch\ns = t.untyped_storage().cuda()\n", line=2, fixed=UNCHANGED),
        Invalid("import torch\nsd = torch.load(p, map_location=lambda storage, loc: storage.cuda())\n", line=2,
                fixed=UNCHANGED),
        Invalid("import torch\n\nclass Batch:\n    def cuda(self):\n        self.x = self.x.cuda()\n        return self\n\n"
                "b = Batch().cuda()\n", line=8, fixed=UNCHANGED),
        # `torch` imported only for type checkers, or lazily: the device module is imported where it is used.
        Invalid("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n\ndef place(m):\n"
                "    return m.cuda()\n", line=6,
                fixed="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n\ndef place(m):\n"
                      "    from device_choice import get_device\n    return m.to(get_device())\n"),
        Invalid("def place(m):\n    import torch\n    return m.cuda()\n", line=3,
                fixed="def place(m):\n    import torch\n    from device_choice import get_device\n"
                      "    return m.to(get_device())\n"),
    ]

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and ctx.qualify(func) is None:
            if _delegates(func.value, ctx):
                return  # `def cuda(self, ...): return super().cuda(...)`: implements the API, does not use it
            if not _torch_signature(node):
                return  # `quantizer.cuda(qtensor, meta=meta)`: another object's method of that name
            ctx.report(self, func.attr, end_node=node)  # from `cuda` to `)`: the line where the call is

    FIXES = (FixSpec("F40", "safe", "`x.cuda()` -> `x.to(get_device())`, `x.cuda(i)` -> `x.to(device_at(i))`: the "
                     "project's one device choice (audit --fix finds or creates it); unsafe through a helper of the "
                     "project's own, whose answer on NVIDIA is its own", device_owner=True),
             FixSpec("F23", "unsafe", "`x.cuda()` -> `x.to(torch.accelerator.current_accelerator())` (`non_blocking=` "
                     "kept; `.cuda(i)` stays a suggestion)", "2.7", gated=True))

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        call = report.fields.get("__end_node")  # reported from the name `cuda` to the end of its call
        if not isinstance(call, cst.Call):
            return None
        held = _not_tensor_cuda(call, rewriter)
        if held is not None:
            return FixPlan.held(f"not rewritten: {held}", "F23")
        owned = _through_owner(report, call, rewriter)
        if owned is not None:
            return owned
        if any(a.keyword is None or a.keyword.value not in _KEPT_KEYWORDS for a in call.args):
            return None  # .cuda(0), .cuda(device=1), .cuda(*a): the index needs the device type split
        device = rewriter.name_for("torch.accelerator.current_accelerator")
        if device is None:
            return None
        text, imports = device
        edits = [rewriter.replace(report.node, "to"), *imports, rewriter.prepend_args(call, text + "()")]
        return FixPlan("unsafe", f"Replace with `.to({text}())`", edits, "2.7", gated=True, fix_id="F23")


def _through_owner(report: Reported, call: cst.Call, rewriter: Rewriter) -> FixPlan | None:
    """`.cuda()` -> `.to(get_device())`, `.cuda(i)` / `.cuda(device=i)` -> `.to(device_at(i))` with `i` an
    index by its looks; None when the project's device owner is not known here (a plain scan)."""
    if not rewriter.device_known():
        return None
    index = next((a for a in call.args if a.keyword is None or a.keyword.value == "device"), None)
    if any(a.star or (a.keyword is not None and a.keyword.value not in (*_KEPT_KEYWORDS, "device")) for a in call.args) \
            or sum(1 for a in call.args if a.keyword is None or a.keyword.value == "device") > 1:
        return None
    if index is not None and not int_like(index.value, rewriter.device_names()):
        return FixPlan.held("not rewritten: the argument of `.cuda(...)` may be a device object, not an index", "F40")
    found = rewriter.device_expr(rewriter.code(index.value) if index is not None else None, at=call)
    if found is None:
        return None  # the project's device cannot be reached here: F23 (gated) as without an owner
    text, imports = found
    kept = [a for a in call.args if a is not index]
    args = ", ".join([text, *(rewriter.code(a.value) if a.keyword is None else
                              f"{a.keyword.value}={rewriter.code(a.value)}" for a in kept)])
    edits = [rewriter.replace(report.node, "to"), NodeEdit(Pos(call.func, "end"), Pos(call, "end"), f"({args})"),
             *imports]
    return FixPlan.to_device(rewriter.device_applicability(), f"Replace with `.to({text})`", edits, "F40")


_OWN_CUDA = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+cuda[ \t]*\(", re.MULTILINE)


def _not_tensor_cuda(call: cst.Call, rewriter: Rewriter) -> str | None:
    """Why this `.cuda()` may not be Tensor.cuda / Module.cuda, whose `.to(device)` it becomes: a
    storage's `.cuda()`, or a class in this file defining its own `cuda()` (a batch object, a module
    overriding it), which `.to(...)` would not call."""
    func = call.func
    receiver = func.value if isinstance(func, cst.Attribute) else None
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        methods = rewriter.ctx.catalogue.table("device").get("not_tensor_methods", ())
        if receiver.func.attr.value in methods:
            return f"`.{receiver.func.attr.value}()` returns a storage, whose `.cuda()` has no `.to(device)` equivalent"
    named = receiver.attr.value if isinstance(receiver, cst.Attribute) else receiver.value \
        if isinstance(receiver, cst.Name) else ""
    if "storage" in named.lower():  # map_location=lambda storage, loc: storage.cuda()
        return f"`{named}` looks like a storage, whose `.to()` takes the device only as a keyword"
    state = rewriter.ctx.state
    if "LK102:own-cuda" not in state:
        state["LK102:own-cuda"] = _OWN_CUDA.search(rewriter.ctx.text) is not None
    if state["LK102:own-cuda"]:
        return ("a class in this file defines its own `cuda()`; `.to(...)` would not call it (the receiver may be "
                "an instance of it)")
    return None


def _delegates(receiver: cst.BaseExpression, ctx: PythonContext) -> bool:
    """`super().cuda(...)` inside a method named `cuda`: an override that passes the call on."""
    return (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
            and ctx.function_name == "cuda")


_TORCH_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})


def _torch_signature(call: cst.Call) -> bool:
    """Whether the call could be torch's `Tensor.cuda(device=None, non_blocking=False,
    memory_format=...)` / `Module.cuda(device=None)`: at most two positional arguments and no
    keyword of another name (`*args` / `**kwargs` may be anything)."""
    positional = sum(1 for a in call.args if a.keyword is None and not a.star)
    return positional <= 2 and all(a.star or a.keyword is None or a.keyword.value in _TORCH_KEYWORDS
                                   for a in call.args)
