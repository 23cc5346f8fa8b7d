from __future__ import annotations

from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.model import Category, Severity


class CudaAvailabilityCheck(ApiRule):
    code = "LK201"
    name = "cuda-availability-check"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is False on every accelerator that is not NVIDIA or AMD, so this path silently runs on the CPU."
    suggestion = "`{replacement}`"
    min_torch = "2.6"
    what = "Finds `torch.cuda.is_available()` and `torch.cuda.is_initialized()` used as the gate for the GPU path."
    why = ("On TPU, Trainium, MPS and XPU the check returns False, so code written as \"use the GPU if there is "
           "one\" quietly trains on the CPU there.")
    instead = "```python\nif torch.accelerator.is_available():\n    ...\n```\n\n`torch.accelerator` (torch 2.6+) covers CUDA, ROCm, XPU, MPS and out-of-tree backends such as TorchTPU and TorchNeuron."

    VALID = [
        Valid("import torch\nif torch.accelerator.is_available():\n    pass\n"),
        Valid("def f(cuda):\n    return cuda.is_available()\n"),
        Valid('"""Call torch.cuda.is_available() first."""\n# torch.cuda.is_available()\n'),
        Valid('import torch\nlogger.info("torch.cuda.is_available() is False")\n'),
    ]
    INVALID = [
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\n", line=2),
        Invalid("import torch as th\nuse_gpu = th.cuda.is_available()\n", line=2),
        Invalid("from torch import cuda as tc\nok = tc.is_available()\n", line=2),
        Invalid("from torch.cuda import is_available\nok = is_available()\n", line=1),
    ]
