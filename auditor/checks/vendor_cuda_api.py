from __future__ import annotations

import re

import libcst as cst

from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity
from auditor.python.names import dotted_name

_TOKENS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Availability checks (guards), device counts (0 where CUDA is absent), errors and the backend class of
# a framework's per-device dispatch (Lightning's `CUDAAccelerator`, which the framework picks only on
# CUDA) are not ties: `is_cuda_available()`, `CUDAAccelerator.auto_device_count()`, `CudaError`.
_NOT_TIES = re.compile(r"(?i)^(is|has|check)_\w*|\w*_(available|enabled|supported|count)$"
                       r"|\w*(error|exception|warning|accelerator)$")


def names_cuda(identifier: str) -> bool:
    """`model_parallel_cuda_manual_seed`, `NCCLWeightTransferEngine`, `pynccl`: a name that says CUDA or NCCL."""
    for token in _TOKENS.findall(identifier):
        token = token.lower()
        if token.startswith("cuda") or token.endswith("cuda") or "nccl" in token:
            return True
    return False


class VendorCudaApi(Rule):
    fields = frozenset({"api"})
    code = "LK298"
    name = "vendor-cuda-api"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    subject = "`{api}`"
    # Not "another library's": a flat repository's own module (`from cuda_graphs import CudaGraphRunner`)
    # is not among the project's packages, so the message claims only what the name says.
    message = ("`{api}` is CUDA- or NCCL-specific by its name (an API outside torch.cuda, whether this project's "
               "own module or another library's): expect it to raise without CUDA, as torch.cuda does (ROCm maps "
               "CUDA and NCCL).")
    suggestion = ("Look for the library's device-neutral entry point (or its per-backend dispatch, e.g. "
                  "`get_accelerator()` in DeepSpeed, `current_platform` in vLLM) and keep this call behind a CUDA "
                  "check where there is none.")
    tokens = ("cuda", "nccl")
    what = ("Finds imports and calls of other libraries' APIs whose names say CUDA or NCCL "
            "(`model_parallel_cuda_manual_seed`, `get_cuda_rng_tracker`, `vllm...pynccl`, "
            "`NCCLWeightTransferEngine`), where torch's own `torch.cuda.*` is covered by the LK2xx rules and "
            "known kernel libraries by LK409. Availability checks (`is_cuda_available()`), exception classes "
            "and the project's own modules are left out.")
    why = ("Libraries built on PyTorch name their CUDA-only paths after CUDA or NCCL: CUDA RNG trackers, NCCL "
           "communicators, CUDA graph runners. They need a CUDA device (or NCCL) just like `torch.cuda.*`, so "
           "they raise on TPU, Trainium, MPS, XPU and CPU.")
    instead = ("Use the library's device-neutral API where it has one (DeepSpeed `get_accelerator()`, vLLM "
               "`current_platform`, Megatron's `tensor_parallel.random` with the device's RNG tracker), or keep the "
               "call behind `if device.type == \"cuda\":`.")

    VALID = [
        Valid("from accelerate.utils import is_cuda_available\nok = is_cuda_available()\n"),
        Valid("import torch\ntorch.cuda.synchronize()\n"),
        Valid('from mylib import helper\nprint("model_parallel_cuda_manual_seed")\n# from x import cuda_thing\n'),
        Valid("from mylib.errors import CudaOutOfMemoryError\nraise CudaOutOfMemoryError()\n"),
        Valid("def f(cuda_seed):\n    return cuda_seed(1)\n"),
        Valid("from lightning.fabric.accelerators import CUDAAccelerator\nn = CUDAAccelerator.auto_device_count()\n"),
    ]
    INVALID = [
        Invalid("from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed\n"
                "model_parallel_cuda_manual_seed(123)\n", line=2),
        Invalid("from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed\n", line=1),
        # trap: a counter's name is not enough when the call does CUDA work (`..._count` only at the end)
        Invalid("from mylib.cuda_ops import count_cuda_blocks\ncount_cuda_blocks(x)\n", line=1),
        Invalid("from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\n", line=1),
        Invalid("import vllm.distributed.weight_transfer.nccl_engine as eng\neng.NCCLWeightTransferEngine.trainer_init(i)\n",
                line=2),
    ]

    def _skip(self, qualified: str, ctx: PythonContext) -> bool:
        top = qualified.split(".", 1)[0]
        own = ctx.facts.own if ctx.facts is not None else frozenset()
        return top == "torch" or top in own or ctx.catalogue.lookup_api(qualified) is not None

    def visit_Import(self, node: cst.Import, ctx: PythonContext) -> None:
        for alias in node.names:
            name = dotted_name(alias.name)
            if name and not self._skip(name, ctx) and any(names_cuda(p) for p in name.split(".")[1:]):
                ctx.report(self, node, api=name)
                return

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) or ""
        if self._skip(module, ctx):
            return
        in_module = any(names_cuda(p) for p in module.split(".")[1:])
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else dotted_name(alias.name)
            if name and (in_module or (names_cuda(name) and not _NOT_TIES.match(name))):
                ctx.report(self, node, api=f"{module}.{name}")
                return

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        qualified = ctx.qualify(node.func)
        if qualified is None or self._skip(qualified, ctx):
            return
        last = qualified.rsplit(".", 1)[-1]
        if _NOT_TIES.match(last) or last == "cuda":  # `.cuda()` is LK102's
            return
        if any(names_cuda(part) for part in qualified.split(".")[1:]):
            ctx.report(self, node, api=qualified)
