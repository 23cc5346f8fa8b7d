from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


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
    ]
