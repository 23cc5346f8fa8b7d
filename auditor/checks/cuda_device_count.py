from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaDeviceCount(CudaApiRule):
    code = "LK202"
    name = "cuda-device-count"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` reads 0 on {degrading_targets}, so multi-device logic silently turns off there."
    suggestion = "{replacement}"
    min_torch = "2.6"
    what = "Finds `torch.cuda.device_count()` (GPU counts, world sizes, per-device loops)."
    why = ("On TPU, Trainium, MPS, XPU and CPU builds the call returns 0 instead of raising, so code that sizes "
           "its workers or picks a device index from it quietly runs on one CPU process.")
    instead = ("```python\nn = torch.accelerator.device_count()\n```\n\n`torch.accelerator.device_count()` (torch 2.6+) "
               "asks whichever accelerator the build has: CUDA, ROCm, XPU, MPS or a PrivateUse1 backend.")

    VALID = [
        Valid("import torch\nn = torch.accelerator.device_count()\n"),
        Valid("def f(cuda):\n    return cuda.device_count()\n"),
        Valid('"""Uses torch.cuda.device_count() GPUs."""\n# n = torch.cuda.device_count()\n'
              'import logging\nlogging.info("torch.cuda.device_count() returned 0")\n'),
        Valid("import torch.cuda\n"),
    ]
    INVALID = [
        Invalid("import torch\nworld = torch.cuda.device_count()\n", line=2),
        Invalid("import torch as th\nfor i in range(th.cuda.device_count()):\n    pass\n", line=2),
        Invalid("from torch import cuda as tc\nn = tc.device_count()\n", line=2),
        Invalid("from torch.cuda import device_count\nn = device_count()\n", line=2),
        # Fix (F13, unsafe, only in a CUDA-clean file).
        Invalid("import torch as th\nfor i in range(th.cuda.device_count()):\n    pass\n", line=2, fix_class="unsafe",
                fixed="import torch as th\nfor i in range(th.accelerator.device_count()):\n    pass\n"),
        Invalid("import torch\nn = torch.cuda.device_count()\nmodel = model.cuda()\nx = x.to('cuda:0')\n", line=2,
                fixed=UNCHANGED),
    ]
