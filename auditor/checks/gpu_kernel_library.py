from __future__ import annotations

import libcst as cst

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity
from auditor.names import dotted_name


class GpuKernelLibrary(KernelApiRule):
    code = "LK409"
    name = "gpu-kernel-library"
    category = Category.KERNEL
    severity = Severity.MAJOR
    message = "`{api}` comes from a GPU kernel library built for NVIDIA (ROCm only through separate ports or builds)."
    suggestion = "Use {replacement}."
    supersedes = ("LK409",)
    tokens = ("vllm._", "from vllm import _")  # compiled extensions, see [gpu_kernel_library]
    what = ("Finds imports and uses of GPU kernel libraries: flash-attn (and its compiled modules), FlashAttention-3, "
            "xformers, apex, mamba-ssm, causal-conv1d, FlashInfer, FlashMLA, DeepGEMM, DeepEP, Transformer Engine, "
            "fbgemm_gpu, wrappers named after them (`vllm.utils.flashinfer`), vLLM's compiled CUDA ops, Liger Kernel, sgl-kernel and the CUTLASS/CuTe and QuACK DSLs "
            "(imports only). The list and the torch-native alternative for each are in rules/kernel.toml.")
    why = ("These packages ship CUDA (or CUDA-tuned Triton/CuTe) kernels. Some have ROCm ports or builds, none runs "
           "on TPU, Trainium, MPS or CPU, and importing them there raises. Torch has native replacements for most "
           "of what they are used for.")
    instead = ("Route the op through the torch-native API and keep the library as an optional fast path:\n\n"
               "```python\ntry:\n    from flash_attn import flash_attn_func\nexcept ImportError:\n    flash_attn_func = None\n\n"
               "if flash_attn_func is not None and q.is_cuda:\n    out = flash_attn_func(q, k, v, causal=True)\nelse:\n"
               "    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n```\n\n"
               "SDPA / `flex_attention` (2.5) for attention, `torch.nn.RMSNorm` (2.4) and fused optimizers "
               "(`fused=True`) for apex, `torch.amp` for apex.amp.")

    VALID = [
        Valid('"""Faster with flash_attn installed."""\n# from flash_attn import flash_attn_func\n'
              'logger.info("xformers not available")\n'),
        Valid("import torch.nn.functional as F\nout = F.scaled_dot_product_attention(q, k, v)\n"),
        Valid("def f(xformers):\n    return xformers.ops.memory_efficient_attention(q, k, v)\n"),
        Valid("import vllm._custom_ops as ops\nfrom vllm import _custom_ops\n"),
        Valid("from transformers.utils import is_flash_attn_2_available\nok = is_flash_attn_2_available()\n"),
    ]
    INVALID = [
        Invalid("from flash_attn import flash_attn_func\nout = flash_attn_func(q, k, v, causal=True)\n", line=2),
        Invalid("import xformers.ops as xops\nout = xops.memory_efficient_attention(q, k, v)\n", line=2),
        Invalid("from apex.optimizers import FusedAdam\n", line=1),
        Invalid("import torch\nout = torch.ops.vllm.flashinfer_mm_bf16_fp4(a, b)\n", line=2),
        Invalid("from vllm.utils.flashinfer import (\n    flashinfer_scaled_fp4_mm,\n)\nout = flashinfer_scaled_fp4_mm(a, b)\n",
                line=4),
        Invalid("try:\n    from apex.normalization import FusedRMSNorm\nexcept ImportError:\n    FusedRMSNorm = None\n",
                line=2),
        Invalid("from mamba_ssm.ops.selective_scan_interface import selective_scan_fn\n", line=1),
        Invalid("import flash_attn_2_cuda as flash_attn_gpu\n", path="flash_attn/flash_attn_interface.py", line=1),
        Invalid("import vllm._C\n", path="vllm/_custom_ops.py", line=1),
        Invalid("import torch\nfrom vllm import _custom_ops, _moe_C\n", line=2),
        Invalid("import cutlass.cute as cute\n@cute.jit\ndef k():\n    pass\n", line=1),
        Invalid("from liger_kernel.transformers import apply_liger_kernel_to_llama\n", line=1),
        Invalid("from transformer_engine import pytorch as te\nlayer = te.Linear(8, 8)\n", line=2),
    ]

    def visit_Import(self, node: cst.Import, ctx: PythonContext) -> None:
        self._compiled(node, [dotted_name(alias.name) for alias in node.names], ctx)

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        self._compiled(node, [f"{module}.{dotted_name(alias.name)}" for alias in node.names], ctx)

    def _compiled(self, node: cst.Import | cst.ImportFrom, names: list[str | None], ctx: PythonContext) -> None:
        """`import vllm._C`: a project's compiled CUDA extension module."""
        table = ctx.catalogue.table("kernel").get("gpu_kernel_library", {})
        found = [name for name in names if name in table.get("compiled_extensions", ())]
        if found:
            ctx.report(self, node, api=found[0], replacement=table.get("compiled_replacement", ""))
