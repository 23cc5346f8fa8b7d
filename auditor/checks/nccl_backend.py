from __future__ import annotations

import re

import libcst as cst

from auditor.checks._values import ValueFlowRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import PythonContext
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity
from auditor.python.syntax import callee_name, keyword, positional, string_value

STATE = "LK301"
BACKEND_WORD = re.compile("backend", re.IGNORECASE)


def _is_nccl(node: cst.CSTNode) -> bool:
    value = string_value(node)
    return value is not None and value.lower() == "nccl"


def _nccl_literals(value: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    """"nccl", or "nccl" as a branch of `a if c else b` / `a or b`, or as the fallback of
    `os.environ.get("X", "nccl")`, `os.getenv(...)` and `getattr(args, "backend", "nccl")`."""
    if value is None:
        return []
    if isinstance(value, cst.IfExp):  # a branch chosen only with CUDA is reported in context (guarded)
        return [*_nccl_literals(value.body), *_nccl_literals(value.orelse)]
    if isinstance(value, cst.BooleanOperation):
        return [*_nccl_literals(value.left), *_nccl_literals(value.right)]
    if isinstance(value, cst.Call) and callee_name(value) in _FALLBACK_CALLS and len(value.args) >= 2:
        return _nccl_literals(value.args[-1].value) if value.args[-1].keyword is None else []
    return [value] if _is_nccl(value) else []



_QUERY_PREFIXES = ("is_", "has_", "get_", "check")
_INIT = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
_FALLBACK_CALLS = frozenset({"get", "getenv", "getattr", "pop", "setdefault"})



class NcclBackend(ValueFlowRule):
    fields = frozenset({"literal"})
    code = "LK301"
    name = "nccl-backend"
    category = Category.DISTRIBUTED
    severity = Severity.MAJOR
    subject = "The NCCL backend {literal}"
    message = ("Process-group backend hard-coded to NCCL ({literal}): only {nvidia_and_working_targets} provide it; it "
               "raises on {raising_targets}.")
    suggestion = ("`backend=dist.get_default_backend_for_device(DEVICE)` (torch 2.6), or leave the backend unset "
                  "and pass `device_id=torch.device(DEVICE.type, local_rank)` (torch 2.6).")
    min_torch = "2.6"
    tokens = ("nccl",)
    what = ('Finds "nccl" chosen as the torch.distributed backend: `init_process_group("nccl")`, `backend="nccl"` '
            'and `*_backend="nccl"` arguments in any call, `default="nccl"` (argparse, dataclass fields), '
            "`dist.Backend.NCCL`, and variables, attributes, dict entries, parameters or return values named "
            "like a backend (or later passed as one) that hold \"nccl\". A \"nccl\" chosen only in a branch "
            "that checks for CUDA (`elif torch.cuda.is_available(): backend = \"nccl\"`) is a per-device "
            "choice: it is reported in that context (guarded), which works on the targets other branches "
            "serve. Comparisons such as `backend == \"nccl\"` are not reported.")
    why = ("NCCL exists only on NVIDIA GPUs (ROCm ships RCCL under the same name). On XPU the backend is xccl, "
           "on CPU and MPS gloo, on TPU and Trainium their own backends: `init_process_group(\"nccl\")` raises "
           "there before training starts.")
    instead = ("Let PyTorch pick the backend for the device:\n\n```python\n"
               "dist.init_process_group(backend=dist.get_default_backend_for_device(DEVICE))\n"
               "# or, torch 2.6+: no backend, bind the rank's device instead\n"
               "dist.init_process_group(device_id=torch.device(DEVICE.type, local_rank))\n```\n\n"
               "`get_default_backend_for_device` maps cuda to nccl, xpu to xccl, cpu to gloo (mps from torch 2.8) "
               "and PrivateUse1 backends such as TorchTPU and TorchNeuron to the backend they register.")

    VALID = [
        Valid('import logging\nlogging.info("using nccl backend")\nprint("nccl")\n'),
        Valid('"""Initialise with the nccl backend."""\n# dist.init_process_group("nccl")\n'),
        Valid('import torch.distributed as dist\nif dist.get_backend() == "nccl":\n    pass\n'),
        Valid('import torch.distributed as dist\nif backend == dist.Backend.NCCL:\n    pass\n'),
        Valid('import torch.distributed as dist\ndist.init_process_group(backend="cpu:gloo,cuda:nccl")\n'),
        Valid('import torch.distributed as dist\n'
              'dist.init_process_group(backend=dist.get_default_backend_for_device(device))\n'),
        Valid('parser.add_argument("--backend", choices=["nccl", "gloo"])\nname = "nccl"\nprint(name)\n'),
        Valid('def setup(dist):\n    dist.init_process_group(backend)\n'),
        Valid('import torch.distributed as dist\nok = dist.is_backend_available("nccl")\n'),
    ]
    INVALID = [
        Invalid('import torch.distributed as dist\ndist.init_process_group("nccl")\n', line=2, context="main"),
        # chosen only where CUDA is there: reported in context, working where another branch serves
        Invalid('import torch\nbackend = "nccl" if torch.cuda.is_available() else "gloo"\n', line=2, context="guarded"),
        Invalid('import torch\nif is_xpu_available():\n    backend = "xccl"\nelif torch.cuda.is_available():\n'
                '    backend = "nccl"\n', line=5, context="guarded"),
        Invalid('if not args.cuda:\n    backend = "gloo"\nelse:\n    backend = "nccl"\n', line=4, context="guarded"),
        Invalid('from torch import distributed as d\nd.init_process_group(backend="NCCL", init_method="env://")\n',
                line=2),
        Invalid('import torch\ntorch.distributed.init_process_group(backend=torch.distributed.Backend.NCCL)\n',
                line=2),
        Invalid('from torch.distributed import Backend\nname = Backend.NCCL\n', line=2),
        Invalid('parser.add_argument("--dist-backend", default="nccl")\n', line=1),
        Invalid('DIST_BACKEND = "nccl"\n', line=1),
        Invalid('import torch.distributed as dist\nb = "nccl"\ndist.init_process_group(b)\n', line=2),
        Invalid('def init(backend="nccl"):\n    pass\n', line=1),
        Invalid('config = {"dist_backend": "nccl"}\n', line=1),
        Invalid('import torch\nbackend = "nccl" if use_nccl else "gloo"\n', line=2),
        Invalid('if device == "xpu":\n    backend = "xccl"\nelse:\n    backend = "nccl"\n', line=4),
        Invalid('import deepspeed\ndeepspeed.init_distributed(dist_backend="nccl")\n', line=2),
        Invalid('class Args:\n    ddp_backend: str = "nccl"\n', line=2),
        Invalid('def get_backend():\n    return "nccl"\n', line=2),
        Invalid('import os\nbackend = os.environ.get("DIST_BACKEND", "nccl")\n', line=2),
        Invalid('import torch.distributed._symmetric_memory as symm_mem\nsymm_mem.set_backend("NCCL")\n', line=2),
        # Fix (F25, only in a CUDA-clean file): the backend of init_process_group becomes the backend for the
        # project's device (audit --fix creates device_choice.py beside the script; nccl on NVIDIA).
        Invalid('import torch.distributed as dist\ndist.init_process_group("nccl", init_method="env://")\n', line=2,
                fixed='import torch.distributed as dist\nfrom device_choice import get_device\n'
                      'dist.init_process_group(dist.get_default_backend_for_device(get_device()), init_method="env://")\n'),
        Invalid('import torch\ntorch.distributed.init_process_group(backend="nccl")\n', line=2,
                fixed='import torch\nfrom device_choice import get_device\ntorch.distributed.init_process_group(backend='
                      'torch.distributed.get_default_backend_for_device(get_device()))\n'),
        Invalid('import torch.distributed as dist\nBACKEND = "nccl"\ndist.init_process_group(BACKEND)\n', line=2,
                fixed=UNCHANGED),
    ]

    role = BACKEND_WORD

    def begin(self, ctx: PythonContext) -> None:
        super().begin(ctx)
        ctx.state[STATE] = set()  # Backend.NCCL nodes inside comparisons

    # -- backend positions -----------------------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        for arg in node.args:
            if arg.keyword is not None and BACKEND_WORD.search(arg.keyword.value):
                self._backend_value(arg.value, ctx)
        index = ctx.catalogue.table("distributed").get("backend_functions", {}).get(ctx.qualify(node.func) or "")
        callee = callee_name(node) or ""
        if index is None and BACKEND_WORD.search(callee) and not callee.startswith(_QUERY_PREFIXES):
            index = 0  # set_backend("nccl"), Backend("nccl"); not is_backend_available("nccl")
        if index is not None:
            arg = positional(node, index)
            if arg is not None:
                self._backend_value(arg.value, ctx)
        default = keyword(node, "default")
        if default is not None:
            for literal in _nccl_literals(default.value):
                self.report_value(literal, ctx)

    def _backend_value(self, value: cst.BaseExpression, ctx: PythonContext) -> None:
        self.mark_used(value, ctx)
        for literal in _nccl_literals(value):
            self.report_value(literal, ctx)

    def visit_Comparison(self, node: cst.Comparison, ctx: PythonContext) -> None:
        # `backend == dist.Backend.NCCL` tests the backend, it does not choose it.
        stack: list[cst.CSTNode] = [node.left, *(c.comparator for c in node.comparisons)]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Attribute):
                ctx.state[STATE].add(id(current))
            elif isinstance(current, (cst.Tuple, cst.List, cst.Set)):
                stack.extend(e.value for e in current.elements)

    def visit_Attribute(self, node: cst.Attribute, ctx: PythonContext) -> None:
        if id(node) in ctx.state[STATE]:
            return
        qualified = ctx.qualify(node)
        if qualified is None:
            return
        for constant in ctx.catalogue.table("distributed").get("backend_constants", ()):
            if qualified == constant or qualified.startswith(constant + "."):
                self.report_value(node, ctx)
                return

    def report_value(self, node: cst.CSTNode, ctx: PythonContext) -> None:
        ctx.report(self, node, literal=ctx.module.code_for_node(node)[:40])

    # -- values that feed a backend position (stored, returned, passed later: see ValueFlowRule) --
    def values_in(self, value: cst.BaseExpression, ctx: PythonContext) -> list[cst.BaseExpression]:
        return _nccl_literals(value)

    FIXES = (FixSpec("F25", "unsafe", '`init_process_group("nccl", ...)` / `backend="nccl"` -> `backend=dist.'
                     "get_default_backend_for_device(get_device())`: the backend for the project's one device "
                     "(nccl on CUDA/ROCm, so the same on NVIDIA; xccl on XPU, gloo on CPU and MPS, a PrivateUse1 "
                     "backend's own); only in a CUDA-clean file, and unsafe like the swaps that make it one "
                     "(set_device, device_count): a default --fix would otherwise switch the backend alone",
                     "2.8", gated=True, device_owner=True),
             FixSpec("F25", "unsafe", "without a device owner (a plain scan): `backend=dist.get_default_backend_for_"
                     'device(torch.accelerator.current_accelerator() or "cpu")`', "2.8", gated=True))

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """Only the backend argument of init_process_group itself: a "nccl" stored in a config or a
        default may be read for other purposes, and a `device_id` may be what the code needs. The
        backend follows the project's device (Rewriter.device_expr) when `--fix` knows it."""
        arg = rewriter.parent(report.node)
        call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or rewriter.ctx.qualify(call.func) not in _INIT:
            return None
        if not ((arg.keyword is None and call.args[0] is arg) or (arg.keyword is not None
                                                                   and arg.keyword.value == "backend")):
            return None
        chooser = rewriter.name_for("torch.distributed.get_default_backend_for_device")
        if chooser is None:
            return None
        if rewriter.device_known():
            found = rewriter.device_expr(at=call)
            if found is None:
                reason = rewriter.device_unavailable()
                return FixPlan.held(f"not rewritten: {reason}", "F25") if reason else None
            text = f"{chooser[0]}({found[0]})"
            # unsafe even through our own module: the gate judges the file as if the unsafe swaps applied
            return FixPlan("unsafe", f"Replace with `{text}` (the backend for the project's device)",
                           [rewriter.replace(report.node, text), *_merged(chooser[1], found[1])], "2.8", gated=True,
                           fix_id="F25", device=True)
        device = rewriter.name_for("torch.accelerator.current_accelerator")
        if device is None:
            return None
        text = f'{chooser[0]}({device[0]}() or "cpu")'
        return FixPlan("unsafe", f"Replace with `{text}`", [rewriter.replace(report.node, text),
                                                            *_merged(chooser[1], device[1])], "2.8",
                       gated=True, fix_id="F25")


def _merged(first: list, second: list) -> list:
    """Both lists of import edits, an edit the first already makes left out of the second."""
    return [*first, *(e for e in second if e.content not in {i.content for i in first})]
