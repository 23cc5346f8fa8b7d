from __future__ import annotations

import libcst as cst

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity

# sdp_kernel's arguments, in order, and the backend each one enables (the order sdp_kernel builds its list in)
_SDP_FLAGS = ("enable_flash", "enable_math", "enable_mem_efficient", "enable_cudnn")
_SDP_BACKENDS = (("enable_flash", "FLASH_ATTENTION"), ("enable_mem_efficient", "EFFICIENT_ATTENTION"),
                 ("enable_math", "MATH"), ("enable_cudnn", "CUDNN_ATTENTION"))


class CudaBackendFlag(CudaApiRule):
    code = "LK218"
    name = "cuda-backend-flag"
    category = Category.CUDA_API
    assign_is_use = True  # setting the flag is the lock-in
    severity = Severity.MINOR
    message = "`{api}` is a CUDA-only backend setting; every other backend silently ignores it."
    suggestion = "{replacement}"
    min_torch = "2.3"
    what = ("Finds `torch.backends.cuda.*`: `matmul.allow_tf32`, reduced-precision reduction flags, "
            "`sdp_kernel(...)`, `enable_flash_sdp/enable_mem_efficient_sdp/enable_math_sdp/enable_cudnn_sdp`, "
            "`preferred_linalg_library`, `preferred_blas_library`, `cufft_plan_cache` and the rest.")
    why = ("TF32 and the cuBLAS/cuSOLVER/cuFFT knobs are NVIDIA terms; the SDPA toggles are global CUDA switches. "
           "Elsewhere nothing happens, so precision and attention-kernel choices silently differ per target.")
    instead = ("```python\ntorch.set_float32_matmul_precision(\"high\")      # instead of matmul.allow_tf32 = True\n"
               "from torch.nn.attention import sdpa_kernel, SDPBackend   # torch 2.3+\n"
               "with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):\n    out = F.scaled_dot_product_attention(q, k, v)\n```")

    VALID = [
        Valid("import torch\ntorch.set_float32_matmul_precision('high')\n"),
        Valid("from torch.nn.attention import sdpa_kernel, SDPBackend\nwith sdpa_kernel([SDPBackend.MATH]):\n    pass\n"),
        Valid("def tf32(cuda):\n    cuda.matmul.allow_tf32 = True\n"),
        Valid('"""Set torch.backends.cuda.matmul.allow_tf32."""\n# torch.backends.cuda.matmul.allow_tf32 = True\n'
              'print("torch.backends.cuda.enable_flash_sdp(False)")\n'),
    ]
    INVALID = [
        Invalid("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", line=2),
        Invalid("import torch as th\nwith th.backends.cuda.sdp_kernel(enable_math=False):\n    pass\n", line=2),
        Invalid("from torch.backends import cuda as bc\nbc.enable_flash_sdp(False)\n", line=2),
        Invalid("import torch\ntorch.backends.cuda.preferred_linalg_library('magma')\n", line=2),
        # Fixes (F27 safe; F28 unsafe: it also sets oneDNN's matmul precision on CPU and XPU).
        Invalid("import torch\nwith torch.backends.cuda.sdp_kernel(enable_math=False, enable_cudnn=False):\n    pass\n",
                line=2, fix_class="safe",
                fixed="from torch.nn.attention import SDPBackend, sdpa_kernel\n"  # `import torch` was used only there
                      "with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):\n    pass\n"),
        Invalid("import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n", line=2, fix_class="unsafe",
                fixed='import torch\ntorch.set_float32_matmul_precision("highest")\n'),
        # Left alone: flags known only at run time; every backend off (sdpa_kernel([]) differs).
        Invalid("import torch\nwith torch.backends.cuda.sdp_kernel(enable_flash=use_flash):\n    pass\n", line=2,
                fixed=UNCHANGED),
        Invalid("import torch\nwith torch.backends.cuda.sdp_kernel(False, False, False, False):\n    pass\n", line=2,
                fixed=UNCHANGED),
    ]

    FIXES = (
        FixSpec("F27", "safe", "`torch.backends.cuda.sdp_kernel(enable_flash=..., ...)` with literal flags -> "
                "`sdpa_kernel([SDPBackend.FLASH_ATTENTION, ...])` (+ `from torch.nn.attention import sdpa_kernel, "
                "SDPBackend`); all flags False stays a suggestion", "2.3"),
        FixSpec("F28", "unsafe", "`torch.backends.cuda.matmul.allow_tf32 = True/False` -> "
                '`torch.set_float32_matmul_precision("high"/"highest")` (also sets oneDNN\'s matmul precision on '
                "CPU and XPU: numerics change there)", "2.0"),
    )

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        ref = report.ref
        if ref is None:
            return None
        if ref.qualified == "torch.backends.cuda.sdp_kernel" and ref.call is not None:
            return _sdp_kernel(ref.call, rewriter)
        if ref.qualified == "torch.backends.cuda.matmul.allow_tf32" and ref.kind == "ref":
            return _allow_tf32(ref.node, rewriter)
        return None


def _sdp_kernel(call: cst.Call, rewriter: Rewriter) -> FixPlan | None:
    flags = dict.fromkeys(_SDP_FLAGS, True)
    for index, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else (_SDP_FLAGS[index] if index < len(_SDP_FLAGS) else None)
        value = arg.value.value if isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False") else None
        if arg.star or name not in flags or value is None:
            return None  # a flag computed at run time: which backends it enables is not known here
        flags[name] = value == "True"
    kernel = rewriter.name_for("torch.nn.attention.sdpa_kernel", from_import=True)
    backend = rewriter.name_for("torch.nn.attention.SDPBackend", from_import=True)
    if kernel is None or backend is None or not any(flags.values()):
        return None
    imports = [*kernel[1], *backend[1]]
    if kernel[1] and backend[1]:  # both missing: one line
        imports = [rewriter.add_import("from torch.nn.attention import SDPBackend, sdpa_kernel")]
    chosen = ", ".join(f"{backend[0]}.{member}" for flag, member in _SDP_BACKENDS if flags[flag])
    edits = [rewriter.replace(call, f"{kernel[0]}([{chosen}])"), *imports]
    return FixPlan("safe", f"Replace with `{kernel[0]}([{chosen}])`", edits, "2.3", fix_id="F27")


def _allow_tf32(target: cst.CSTNode, rewriter: Rewriter) -> FixPlan | None:
    assign_target = rewriter.parent(target)
    assign = rewriter.parent(assign_target) if isinstance(assign_target, cst.AssignTarget) else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.value, cst.Name):
        return None
    precision = {"True": "high", "False": "highest"}.get(assign.value.value)
    setter = rewriter.name_for("torch.set_float32_matmul_precision")
    if precision is None or setter is None:
        return None
    text = f'{setter[0]}("{precision}")'
    return FixPlan("unsafe", f"Replace with `{text}`", [rewriter.replace(assign, text), *setter[1]], "2.0",
                   fix_id="F28")
