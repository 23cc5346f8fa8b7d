from __future__ import annotations

import libcst as cst

from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity
from auditor.python.syntax import contains_call_to, is_cuda_device, name_of_target, string_value

IS_AVAILABLE = "torch.cuda.is_available"


def _is_cuda_choice(node: cst.BaseExpression, ctx: PythonContext) -> bool:
    """"cuda..." or torch.device("cuda...")."""
    if is_cuda_device(node):
        return True
    return (isinstance(node, cst.Call) and ctx.qualify(node.func) == "torch.device" and bool(node.args)
            and is_cuda_device(node.args[0].value))


class CudaElseCpuFallback(Rule):
    code = "LK103"
    name = "cuda-else-cpu-fallback"
    category = Category.DEVICE
    severity = Severity.MINOR
    subject = "This CUDA-else-CPU device choice"
    message = "`\"cuda\" if torch.cuda.is_available() else \"cpu\"` never picks a non-NVIDIA accelerator: it falls back to the CPU."
    suggestion = ("`torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")` "
                  "(torch 2.7; on 2.6: `torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
                  "else torch.device(\"cpu\")`).")
    min_torch = "2.7"
    tokens = ("cuda",)
    supersedes = ("LK101", "LK201")
    what = ('Finds the idiom `"cuda" if torch.cuda.is_available() else "cpu"` (also inside `torch.device(...)` '
            "and as an if/else statement that assigns the two devices).")
    why = ("It runs everywhere, so nobody notices: on TPU, Trainium, MPS and XPU the program silently trains on "
           "the CPU. It is the lower-severity cousin of a hard-coded \"cuda\".")
    instead = ("```python\nDEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")\n```\n\n"
               "This yields `device(type='cuda')` on NVIDIA and AMD, the MPS/XPU/PrivateUse1 device elsewhere and "
               "the CPU when there is no accelerator.")

    VALID = [
        Valid('import torch\ndevice = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n'),
        Valid('import torch\nmode = "fast" if torch.cuda.is_available() else "slow"\n'),
        Valid('device = "cuda" if is_available() else "cpu"\n'),
    ]
    INVALID = [
        Invalid('import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', line=2),
        Invalid('import torch as th\ndev = "cuda:0" if th.cuda.is_available() else "cpu"\n', line=2),
        Invalid('from torch import cuda\ndevice = "cpu" if not cuda.is_available() else "cuda"\n', line=2),
        Invalid('import torch\nif torch.cuda.is_available():\n    device = "cuda"\nelse:\n    device = "cpu"\n', line=2),
        # Fixes. A plain scan offers F11 (unsafe, only in a CUDA-clean file); `audit --fix` knows the project's
        # device owner (here none: it creates device_choice.py beside the script) and applies F42 (safe).
        Invalid('import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', line=2,
                fix_class="unsafe", fixed='from device_choice import get_device\ndevice = get_device()\n'),
        Invalid('import torch as th\ndev = "cuda" if th.cuda.is_available() else "cpu"\nx = th.ones(1)\n', line=2,
                fixed='import torch as th\nfrom device_choice import get_device\ndev = get_device().type\n'
                      'x = th.ones(1)\n'),
        Invalid('from torch import cuda\ndevice = "cpu" if not cuda.is_available() else "cuda"\n', line=2,
                fixed='from device_choice import get_device\ndevice = get_device().type\n'),
        Invalid('import torch\nif torch.cuda.is_available():\n    device = "cuda"\nelse:\n    device = "cpu"\n', line=2,
                fixed='from device_choice import get_device\ndevice = get_device().type\n'),
        Invalid('import torch\nd = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")\n',
                line=2, fixed='from device_choice import get_device\nd = get_device()\n'),
        # Left alone: an index, a condition that also asks a flag, a comment the rewrite would drop.
        Invalid('import torch\ndev = "cuda:0" if torch.cuda.is_available() else "cpu"\n', line=2, fixed=UNCHANGED),
        Invalid('import torch\ndev = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"\n', line=2,
                fixed=UNCHANGED),
        Invalid('import torch\nif torch.cuda.is_available():\n    device = "cuda"  # GPU\nelse:\n    device = "cpu"\n',
                line=2, fixed=UNCHANGED),
    ]

    def visit_IfExp(self, node: cst.IfExp, ctx: PythonContext) -> None:
        if ((_is_cuda_choice(node.body, ctx) or _is_cuda_choice(node.orelse, ctx))
                and contains_call_to(node.test, IS_AVAILABLE, ctx)):
            ctx.report(self, node)

    def visit_If(self, node: cst.If, ctx: PythonContext) -> None:
        """`if torch.cuda.is_available(): d = "cuda"` / `else: d = "cpu"`."""
        if not isinstance(node.orelse, cst.Else) or not contains_call_to(node.test, IS_AVAILABLE, ctx):
            return
        body, other = _single_assignment(node.body), _single_assignment(node.orelse.body)
        if body is None or other is None or name_of_target(body[0]) != name_of_target(other[0]):
            return
        if is_cuda_device(body[1]) and string_value(other[1]) == "cpu" or (
                is_cuda_device(other[1]) and string_value(body[1]) == "cpu"):
            ctx.report(self, node)

    FIXES = (
        FixSpec("F42", "safe", '`torch.device("cuda" if torch.cuda.is_available() else "cpu")` -> `get_device()`, '
                "the string form -> `get_device().type`: the project's one device choice (audit --fix finds or creates "
                "it), the same device on NVIDIA with or without a GPU; unsafe through a helper of the project's own",
                device_owner=True),
        FixSpec("F11", "unsafe", '`torch.device("cuda" if torch.cuda.is_available() else "cpu")` -> '
                '`(torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu"))`', "2.7",
                gated=True),
        FixSpec("F11", "unsafe", 'the same on torch 2.6: `(torch.accelerator.current_accelerator() if '
                'torch.accelerator.is_available() else torch.device("cpu"))`', "2.6", gated=True),
        FixSpec("F11", "unsafe", '`"cuda" if torch.cuda.is_available() else "cpu"` (also as an if/else statement) '
                '-> `(torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu")`',
                "2.6", gated=True),
    )

    def fix(self, report: Reported, rewriter: Rewriter) -> list[FixPlan] | None:
        node = report.node
        if isinstance(node, cst.If):
            return self._statement(node, rewriter)
        if not isinstance(node, cst.IfExp) or not _plain_check(node.test, rewriter):
            return None
        cuda, cpu = (node.orelse, node.body) if _negated(node.test) else (node.body, node.orelse)
        kinds = _choice(cuda, "cuda", rewriter), _choice(cpu, "cpu", rewriter)
        if kinds == ("device", "device"):
            return _owner_form(node, rewriter, objects=True) or _device_forms(node, rewriter)
        if kinds != ("str", "str"):
            return None
        arg = rewriter.parent(node)
        call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
        if (isinstance(call, cst.Call) and len(call.args) == 1 and arg.keyword is None
                and rewriter.ctx.qualify(call.func) == "torch.device"):
            return _owner_form(call, rewriter, objects=True) or _device_forms(call, rewriter)
        return _owner_form(node, rewriter, objects=False) or _string_form(node, rewriter)

    def _statement(self, node: cst.If, rewriter: Rewriter) -> list[FixPlan] | None:
        """`if torch.cuda.is_available(): d = "cuda"` / `else: d = "cpu"` -> one assignment."""
        if (not _plain_check(node.test, rewriter) or not isinstance(node.orelse, cst.Else)
                or isinstance(rewriter.parent(node), cst.If) or "#" in rewriter.code(node)):
            return None  # an elif cannot become an assignment; comments inside would be lost
        body, other = _single_assignment(node.body), _single_assignment(node.orelse.body)
        if body is None or other is None:
            return None
        (target, cuda), (_, cpu) = (other, body) if _negated(node.test) else (body, other)
        if string_value(cuda) != "cuda" or string_value(cpu) != "cpu":
            return None
        prefix = rewriter.code(target) + " = "
        return _owner_form(node, rewriter, objects=False, prefix=prefix) or _string_form(node, rewriter, prefix=prefix)


def _owner_form(node: cst.CSTNode, rewriter: Rewriter, objects: bool, prefix: str = "") -> list[FixPlan] | None:
    """With the project's device owner (audit --fix): `get_device()` for the device-object forms,
    `get_device().type` for the strings; the same on NVIDIA, with or without a visible GPU. None
    when the run knows no owner (a plain scan) or cannot reach it here."""
    if not rewriter.device_known():
        return None
    found = rewriter.device_expr(at=node) if objects else rewriter.device_type_expr(at=node)
    if found is None:
        return None
    text, imports = found
    return [FixPlan.to_device(rewriter.device_applicability(), f"Replace with `{prefix}{text}` (the project's device)",
                              [rewriter.replace(node, prefix + text), *imports], "F42")]


def _plain_check(test: cst.BaseExpression, rewriter: Rewriter) -> bool:
    """`torch.cuda.is_available()` or `not torch.cuda.is_available()`, nothing else: a condition
    that also asks a flag (`args.cuda and ...`) would be lost by the rewrite."""
    if _negated(test):
        test = test.expression  # type: ignore[attr-defined]
    return (isinstance(test, cst.Call) and not test.args and rewriter.ctx.qualify(test.func) == IS_AVAILABLE)


def _negated(test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)


def _choice(node: cst.BaseExpression, device: str, rewriter: Rewriter) -> str | None:
    """"str" for the literal `device`, "device" for `torch.device(device)`, else None."""
    if string_value(node) == device:
        return "str"
    if (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None
            and string_value(node.args[0].value) == device and rewriter.ctx.qualify(node.func) == "torch.device"):
        return "device"
    return None


def _names(rewriter: Rewriter, *qualified: str) -> tuple[list[str], list] | None:
    texts, edits = [], []
    for name in qualified:
        spelled = rewriter.name_for(name)
        if spelled is None:
            return None
        texts.append(spelled[0])
        edits += [e for e in spelled[1] if e.content not in {x.content for x in edits}]
    return texts, edits


def _device_forms(node: cst.CSTNode, rewriter: Rewriter) -> list[FixPlan] | None:
    found = _names(rewriter, "torch.accelerator", "torch.device")
    if found is None:
        return None
    (accelerator, device), imports = found
    new = f'({accelerator}.current_accelerator(check_available=True) or {device}("cpu"))'
    old = f'({accelerator}.current_accelerator() if {accelerator}.is_available() else {device}("cpu"))'
    return [FixPlan("unsafe", f"Replace with `{new}`", [rewriter.replace(node, new), *imports], "2.7", True, "F11"),
            FixPlan("unsafe", f"Replace with `{old}`", [rewriter.replace(node, old), *imports], "2.6", True, "F11")]


def _string_form(node: cst.CSTNode, rewriter: Rewriter, prefix: str = "") -> list[FixPlan] | None:
    found = _names(rewriter, "torch.accelerator")
    if found is None:
        return None
    (accelerator,), imports = found
    new = f'({accelerator}.current_accelerator().type if {accelerator}.is_available() else "cpu")'
    return [FixPlan("unsafe", f"Replace with `{prefix}{new}`", [rewriter.replace(node, prefix + new), *imports],
                    "2.6", True, "F11")]


def _single_assignment(block: cst.BaseSuite) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    small = statements[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Assign) or len(small[0].targets) != 1:
        return None
    return small[0].targets[0].target, small[0].value
