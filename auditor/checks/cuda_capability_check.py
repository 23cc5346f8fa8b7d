from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from auditor.checks._cuda_api import CudaApiRule, skipped
from auditor.checks.base import Invalid, Valid
from auditor.checks.cuda_build_script import is_build_script
from auditor.model import Category, Severity
from auditor.python.tree import descendants

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference

TEXT = "LK215-text"  # node ids inside f-strings and print/log/format arguments
GATE = "LK215-gate"  # node ids inside conditions: if/while/ternary/assert tests, comparisons, and/or/not
_TEXT_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                         "format", "write", "echo", "secho"})


class CudaCapabilityCheck(CudaApiRule):
    code = "LK215"
    name = "cuda-capability-check"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` only knows CUDA: elsewhere it reports False, None or [] and the code silently takes the fallback."
    suggestion = "{replacement}"
    min_torch = "2.10"
    what = ("Finds CUDA build and feature gates: `torch.cuda.is_bf16_supported()`, `is_tf32_supported()`, "
            "`get_arch_list()`, `get_gencode_flags()`, `torch.version.cuda`, `torch.backends.cudnn.version()`, "
            "`torch.backends.cudnn.is_available()` and `torch.backends.cuda.is_built()`.")
    why = ("These never raise, but off CUDA they answer False, None or []: a bf16-capable TPU or XPU trains in "
           "fp16/fp32, and `torch.version.cuda is not None` branches skip every other accelerator.")
    instead = ("```python\nbf16 = torch.bfloat16 in torch.accelerator.get_device_capability()[\"supported_dtypes\"]  # 2.10+\n"
               "bf16 = torch.get_device_module(dev).is_bf16_supported()   # cuda, xpu, mtia\n"
               "dev = torch.accelerator.current_accelerator()             # which accelerator, not which CUDA\n```")

    VALID = [
        Valid("import torch\nacc = torch.accelerator.current_accelerator()\nhip = torch.version.hip\n"),
        Valid("def bf16(cuda):\n    return cuda.is_bf16_supported()\n"),
        Valid('"""Checks torch.version.cuda."""\n# if torch.cuda.is_bf16_supported():\n'
              'print("requires torch.backends.cudnn.version() >= 8")\n'),
        Valid('import torch\nprint(f"CUDA {torch.version.cuda}, bf16 {torch.cuda.is_bf16_supported()}")\n'
              'logger.info("cudnn %s", torch.backends.cudnn.version())\n'),
        Valid('import torch\ninfo = {"cuda": torch.version.cuda}\nrecord(cuda=torch.version.cuda)\n'),
    ]
    INVALID = [
        Invalid("import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n", line=2),
        Invalid("import torch as th\nif th.version.cuda is not None:\n    pass\n", line=2),
        Invalid("import torch.backends.cudnn as cudnn\nv = cudnn.version()\n", line=2),
        Invalid("from torch.cuda import get_arch_list\narchs = get_arch_list()\n", line=2),
        Invalid("import torch\nIS_CUDA = torch.version.cuda is not None\n", line=2),
        Invalid("import torch\nv = torch.version.cuda\nif not v:\n    pass\n", line=3),
    ]

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[GATE + "-on"] = "version" in ctx.text  # gates only matter for torch.version.cuda

    # -- text: the value is shown, not used to decide anything ---------------------------------
    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression, ctx: PythonContext) -> None:
        skipped(ctx, TEXT).update(id(n) for n in descendants(node.expression))

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if name in _TEXT_CALLS:
            skipped(ctx, TEXT).update(id(n) for arg in node.args for n in descendants(arg.value))

    # -- gates: where a plain value such as torch.version.cuda decides a branch ----------------
    def _gate(self, node: cst.CSTNode | None, ctx: PythonContext) -> None:
        if node is not None and ctx.state.get(GATE + "-on"):
            skipped(ctx, GATE).update(id(n) for n in descendants(node))

    def visit_If(self, node: cst.If, ctx: PythonContext) -> None:
        self._gate(node.test, ctx)

    def visit_While(self, node: cst.While, ctx: PythonContext) -> None:
        self._gate(node.test, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx: PythonContext) -> None:
        self._gate(node.test, ctx)

    def visit_Assert(self, node: cst.Assert, ctx: PythonContext) -> None:
        self._gate(node.test, ctx)

    def visit_Comparison(self, node: cst.Comparison, ctx: PythonContext) -> None:
        self._gate(node, ctx)

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx: PythonContext) -> None:
        self._gate(node, ctx)

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx: PythonContext) -> None:
        if isinstance(node.operator, cst.Not):
            self._gate(node, ctx)

    def keep(self, ref: Reference, ctx: PythonContext) -> bool:
        if not super().keep(ref, ctx) or id(ref.node) in skipped(ctx, TEXT):
            return False
        # A called check (`is_bf16_supported()`) is a decision wherever it appears; a plain value
        # (`torch.version.cuda`) only when it decides a branch, not when it is stored or reported.
        if ref.kind == "call" or id(ref.node) in skipped(ctx, GATE):
            return True
        owner = ctx.rules_by_name.get("cuda-build-script")
        if owner is not None and ref.qualified == "torch.version.cuda" and is_build_script(ctx):
            ctx.report(owner, ref.node, api="torch.version.cuda")  # build code computing with it: LK414
        return False
