from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudnnFlag(CudaApiRule):
    code = "LK216"
    name = "cudnn-flag"
    category = Category.CUDA_API
    assign_is_use = True  # setting the flag is the lock-in
    severity = Severity.INFO
    message = "`{api}` is a cuDNN (CUDA) / MIOpen (ROCm) setting; {degrading_targets} ignore it."
    suggestion = "{replacement}"
    what = ("Finds `torch.backends.cudnn.*` settings and helpers: `benchmark`, `enabled`, `allow_tf32`, "
            "`flags(...)`, `conv.fp32_precision` and the rest.")
    why = ("Harmless: setting a cuDNN flag never raises. But it does nothing on TPU, Trainium, MPS, XPU or CPU, "
           "so tuning or precision choices made through it do not carry over.")
    instead = ("Keep it for CUDA/ROCm. For convolution precision prefer `torch.backends.cudnn.conv.fp32_precision` "
               "(torch 2.9+) and `torch.set_float32_matmul_precision(...)`, which other backends also read.")

    VALID = [
        Valid("import torch\ntorch.set_float32_matmul_precision('high')\n"),
        Valid("def tune(cudnn):\n    cudnn.benchmark = True\n"),
        Valid('"""Set torch.backends.cudnn.benchmark = True."""\n# torch.backends.cudnn.benchmark = True\n'
              'print("torch.backends.cudnn.enabled")\n'),
        Valid("import torch.backends.cudnn as cudnn\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.backends.cudnn.benchmark = True\n", line=2),
        Invalid("import torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n", line=2),
        Invalid("import torch as th\nth.backends.cudnn.allow_tf32 = False\n", line=2),
        Invalid("from torch.backends import cudnn\nwith cudnn.flags(enabled=False):\n    pass\n", line=2),
    ]
