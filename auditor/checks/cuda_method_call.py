from __future__ import annotations

import libcst as cst

from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity


class CudaMethodCall(Rule):
    code = "LK102"
    name = "cuda-method-call"
    category = Category.DEVICE
    severity = Severity.MAJOR
    message = "`.cuda()` moves this tensor or module to an NVIDIA/AMD GPU and raises everywhere else."
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
        Valid('def f(cuda):\n    return cuda\n# model.cuda()\nprint("call .cuda() to move")\n'),
    ]
    INVALID = [
        Invalid("model = Net().cuda()\n", line=1),
        Invalid("x = x.cuda(non_blocking=True)\n", line=1),
        Invalid("batch = [t.cuda(rank) for t in batch]\n", line=1),
        Invalid("net = torch.nn.DataParallel(model).cuda()\n", line=1),
        Invalid("t = (\n    torch.empty(3)\n    .random_(0, 2)\n    .cuda()\n)\n", line=4),
    ]

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and ctx.qualify(func) is None:
            ctx.report(self, func.attr, end_node=node)  # from `cuda` to `)`: the line where the call is
