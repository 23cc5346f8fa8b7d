from __future__ import annotations

import libcst as cst

from auditor.checks._helpers import contains_call_to, is_cuda_device, name_of_target, string_value
from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity

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


def _single_assignment(block: cst.BaseSuite) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    small = statements[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Assign) or len(small[0].targets) != 1:
        return None
    return small[0].targets[0].target, small[0].value
