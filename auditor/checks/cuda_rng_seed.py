from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaRngSeed(CudaApiRule):
    code = "LK207"
    name = "cuda-rng-seed"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` seeds only CUDA devices; on other accelerators it is a no-op and their RNG stays unseeded."
    suggestion = "{replacement}"
    what = "Finds `torch.cuda.manual_seed(s)`, `manual_seed_all(s)`, `seed()` and `seed_all()`."
    why = ("Off CUDA the call is queued and never runs, so MPS, XPU, TPU and Trainium runs are not reproducible "
           "even though the code looks seeded.")
    instead = ("```python\ntorch.manual_seed(seed)\n```\n\n`torch.manual_seed` seeds the CPU and every CUDA, MPS, XPU, "
               "MTIA and PrivateUse1 device (not XLA). When the same scope already calls `torch.manual_seed(seed)`, "
               "simply delete the CUDA call.")

    VALID = [
        Valid("import torch\ntorch.manual_seed(0)\n"),
        Valid("def seed_all(cuda, s):\n    cuda.manual_seed_all(s)\n"),
        Valid('"""Also calls torch.cuda.manual_seed_all(seed)."""\n# torch.cuda.manual_seed(0)\n'
              'print("torch.cuda.manual_seed_all")\n'),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.manual_seed_all(seed)\n", line=2),
        Invalid("import torch as th\nth.cuda.manual_seed(seed)\n", line=2),
        Invalid("from torch import cuda as tc\ntc.seed_all()\n", line=2),
        Invalid("from torch.cuda import manual_seed\nmanual_seed(1)\n", line=2),
    ]
