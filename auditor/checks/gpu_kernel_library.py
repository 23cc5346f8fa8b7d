from __future__ import annotations

import libcst as cst

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.context import FALLBACK_ONLY, PythonContext, Reference
from auditor.model import Category, Severity
from auditor.python.names import dotted_name

DEFAULT_NOTE = "a GPU kernel library built for NVIDIA (ROCm only through separate ports or builds)"


class GpuKernelLibrary(KernelApiRule):
    code = "LK409"
    name = "gpu-kernel-library"
    category = Category.KERNEL
    severity = Severity.MAJOR
    message = "`{api}` comes from {note}."
    suggestion = "Use {replacement}."
    supersedes = ("LK409",)
    # compiled extensions (see [gpu_kernel_library]) and a project's own `_C` extension
    # `from . import _C`, not `import _compute_mask_indices` (own GPU modules: registry.build_prefilter)
    tokens = ("vllm._", "from vllm import _", "import _c\n", "import _c ", "import _c,", "import _c\r", "._c import", "._c\n",
              "._c as")
    what = ("Finds imports and uses of GPU kernel libraries: flash-attn (and its compiled modules), FlashAttention-3, "
            "xformers, apex, mamba-ssm, causal-conv1d, FlashInfer, FlashMLA, DeepGEMM, DeepEP, Transformer Engine, "
            "fbgemm_gpu, wrappers named after them (`vllm.utils.flashinfer`), vLLM's compiled CUDA ops, Liger Kernel, sgl-kernel, TileLang, Unsloth and the CUTLASS/CuTe and QuACK DSLs "
            "(imports only), and imports of a compiled extension that a `CUDAExtension(...)` in the project's "
            "setup.py defines (also `from . import _C`). The list, each library's support per target and the "
            "torch-native alternative are in rules/kernel.toml; an import inside try/except with a fallback, or "
            "under `if is_flash_attn_available():`, is reported as optional.")
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
        Invalid("import tilelang\nimport tilelang.language as T\n\n@tilelang.jit\ndef matmul(M, N, K):\n    pass\n",
                line=4),
        Invalid("from unsloth import FastLanguageModel\nmodel, tok = FastLanguageModel.from_pretrained(name)\n", line=2),
        # the optional fast path its own docs recommend: reported as optional, not as raising
        Invalid("try:\n    from flash_attn import flash_attn_func\nexcept ImportError:\n    flash_attn_func = None\n",
                line=2, context="optional"),
        # a handler that re-raises is no fallback
        Invalid("try:\n    import flash_attn\nexcept ImportError:\n    raise\n", line=2, context="main"),
    ]

    def visit_Import(self, node: cst.Import, ctx: PythonContext) -> None:
        names = [dotted_name(alias.name) for alias in node.names]
        if not self._compiled(node, names, ctx):
            self._own_module(node, [n for n in names if n], ctx)

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module is not None else ""
        if node.relative:  # `from . import _C` inside the package that builds it
            package = ctx.facts.package if ctx.facts is not None else ""
            if not package:
                return
            parts = package.split(".")
            up = len(node.relative) - 1
            if up >= len(parts):
                return
            base = ".".join(parts[:len(parts) - up])
            module = f"{base}.{module}" if module else base
        names = [f"{module}.{dotted_name(alias.name)}" for alias in node.names]
        if not self._compiled(node, names, ctx) and (node.relative or ctx.catalogue.lookup_api(module) is None):
            self._own_module(node, [module], ctx, relative=bool(node.relative))

    # -- the project's own GPU modules -----------------------------------------------------------------
    def _own_module(self, node: cst.Import | cst.ImportFrom, modules: list[str], ctx: PythonContext,
                    relative: bool = False) -> None:
        """A GPU library importing one of its own GPU modules (`from .triton_utils import ...`): an
        inventory line (own-package context). Absolute imports of catalogue libraries go through
        `accepts`; relative ones never reach the catalogue."""
        if ctx.facts is None or not (ctx.facts.gpu_library or ctx.resolver.current is not ctx.resolver.module):
            # an ordinary project importing its own modules at their top: no tie; inside a function
            # (`from .flash_attn_triton import ...` in one branch) the import is reported, so the
            # cross-file step knows the module is imported only there (auditor.analysis.crossfile)
            return
        own = ctx.facts.own
        for module in modules:
            if module.split(".", 1)[0] in own and (relative or ctx.catalogue.lookup_api(module) is None):
                named = gpu_module(module, ctx)
                if named or in_gpu_package(module, ctx):
                    extra = {} if named else {FALLBACK_ONLY: True}
                    ctx.report(self, node, api=module, replacement="", note=f"this project's own GPU module `{module}`",
                               **extra)
                    return

    def emit(self, ref: Reference, ctx: PythonContext, **fields: object) -> None:
        fields.setdefault("note", ref.entry.note or DEFAULT_NOTE)
        if _own_import(ref, ctx) and not gpu_module(ref.qualified, ctx):
            fields[FALLBACK_ONLY] = True  # accepted for its GPU package alone: see in_gpu_package
        super().emit(ref, ctx, **fields)

    def accepts(self, ref: Reference, ctx: PythonContext) -> bool:
        """In a GPU library's own code, its own package: an import of one of its GPU modules is an
        inventory line; other imports (helpers, reference implementations) and calls are not ties."""
        if _own_import(ref, ctx) is not None:  # not a wrapper of another library (vllm.utils.flashinfer)
            return ref.kind == "import" and (gpu_module(ref.qualified, ctx) or in_gpu_package(ref.qualified, ctx))
        return True

    def _compiled(self, node: cst.Import | cst.ImportFrom, names: list[str | None], ctx: PythonContext) -> bool:
        """`import vllm._C`, `from . import _C`: a compiled CUDA extension module, one the catalogue
        knows or one a `CUDAExtension(...)` in the project's setup.py defines."""
        table = ctx.catalogue.table("kernel").get("gpu_kernel_library", {})
        built = ctx.facts.extensions if ctx.facts is not None else frozenset()
        known = frozenset(table.get("compiled_extensions", ()))
        for name in names:
            if name is None:
                continue
            extension = next((e for e in (*known, *built) if name == e or name.startswith(e + ".")), None)
            if extension is not None:
                note = (f"this project's CUDA extension (`CUDAExtension(\"{extension}\", ...)` in its setup.py)"
                        if extension in built else DEFAULT_NOTE)
                ctx.report(self, node, api=extension, replacement=table.get("compiled_replacement", ""), note=note)
                return True
        return False


def _own_import(ref: Reference, ctx: PythonContext) -> bool | None:
    """None when the reference is not into the project's own package (a catalogue library's
    own code importing itself), else whether it is an import."""
    own = ctx.facts.own if ctx.facts is not None else frozenset()
    if not own or ref.entry.name.split(".", 1)[0] not in own:
        return None
    return ref.kind == "import"


def in_gpu_package(module: str, ctx: PythonContext) -> bool:
    """Whether an own module sits inside a package named for GPU code (`pkg.ops.cute.mamba3.step_fn`,
    `pkg.ops.tilelang.mimo`) without its own name saying so. Unconditionally imported, such a module
    is often a helper (`pkg.triton_utils.mixin`); imported under a fallback (`try: ... except
    ImportError: step_fn = None`), the project itself says it may fail to import, so the import is
    reported only there (FALLBACK_ONLY) and the module becomes as optional as that import
    (auditor.analysis.crossfile.link_optional_modules)."""
    words = ctx.catalogue.table("contexts").get("own_package", {}).get("gpu_words", ())
    parts = module.lower().split(".")[1:-1]
    return any(not {part, *part.split("_")}.isdisjoint(words) for part in parts)


def gpu_module(module: str, ctx: PythonContext) -> bool:
    """Whether a module's own name (below its top package) says GPU code: `pkg.triton_utils`,
    `pkg.triton_utils.kernels`, `pkg.ops.kernels` in a file that says "cuda", not
    `pkg.triton_utils.mixin` (a helper inside a GPU package) nor every `pkg.kernels`."""
    table = ctx.catalogue.table("contexts").get("own_package", {})
    parts = module.lower().split(".")[1:]
    last = parts[-1] if parts else ""
    tokens = {last, *(token for token in last.split("_") if token)}
    if not tokens.isdisjoint(table.get("gpu_words", ())):
        return True
    if tokens.isdisjoint(table.get("generic_gpu_words", ())):
        return False
    if any(not {part, *part.split("_")}.isdisjoint(table.get("gpu_words", ())) for part in parts[:-1]):
        return True  # `pkg.triton_utils.kernels`: kernels inside a GPU package
    says_cuda = ctx.state.get("LK409:cuda")
    if says_cuda is None:
        says_cuda = ctx.state["LK409:cuda"] = "cuda" in ctx.text.lower()
    return says_cuda
