from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaAmpDeprecated(CudaApiRule):
    code = "LK209"
    name = "cuda-amp-deprecated"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` is deprecated (torch 2.4) and pins mixed precision to CUDA; elsewhere AMP silently turns off."
    suggestion = "{replacement}"
    min_torch = "2.4"
    what = ("Finds everything under `torch.cuda.amp`: `autocast`, `GradScaler`, `custom_fwd`, `custom_bwd`, as "
            "calls, context managers, decorators and imports (`from torch.cuda.amp import autocast` and each "
            "bare `autocast()` that follows).")
    why = ("The wrappers hard-code `\"cuda\"`: on TPU, Trainium, MPS, XPU and CPU they warn and disable "
           "autocast or the scaler, so training silently runs in fp32. They emit a FutureWarning since torch 2.4.")
    instead = ("```python\nwith torch.amp.autocast(dev.type):\n    loss = model(x)\n"
               "scaler = torch.amp.GradScaler(dev.type)\n\n@torch.amp.custom_fwd(device_type=dev.type)\n"
               "def forward(ctx, x): ...\n```\n\nA strict rename first: `torch.amp.autocast(\"cuda\", enabled=..., "
               "dtype=...)` (pass keywords: the argument order differs). `torch.cpu.amp` is not NVIDIA lock-in.")

    VALID = [
        Valid("import torch\nwith torch.amp.autocast(device_type=dev.type):\n    y = model(x)\n"),
        Valid("import torch\nwith torch.cpu.amp.autocast():\n    y = model(x)\n"),
        Valid("def run(cuda, model, x):\n    with cuda.amp.autocast():\n        return model(x)\n"),
        Valid('"""Wrap in torch.cuda.amp.autocast()."""\n# from torch.cuda.amp import autocast\n'
              'print("torch.cuda.amp.autocast is deprecated")\n'),
        Valid("from torch.amp import autocast\nwith autocast('cpu'):\n    pass\n"),
    ]
    INVALID = [
        Invalid("import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n", line=2),
        Invalid("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n", line=1),
        Invalid("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n", line=2),
        Invalid("import torch as th\nscaler = th.cuda.amp.GradScaler()\n", line=2),
        Invalid("import torch\n\nclass F(torch.autograd.Function):\n    @staticmethod\n"
                "    @torch.cuda.amp.custom_fwd\n    def forward(ctx, x):\n        return x\n", line=5),
        Invalid("from torch.cuda import amp\nwith amp.autocast(enabled=True):\n    pass\n", line=2),
    ]
