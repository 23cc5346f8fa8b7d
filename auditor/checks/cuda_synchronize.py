from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaSynchronize(CudaApiRule):
    code = "LK204"
    name = "cuda-synchronize"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` raises on every target without CUDA ({raising_targets})."
    suggestion = "{replacement}"
    min_torch = "2.6"
    what = "Finds `torch.cuda.synchronize()`, typical in timing and benchmark code."
    why = ("Without CUDA the call raises \"Torch not compiled with CUDA enabled\", so a timing helper or a "
           "checkpoint barrier crashes the run on every other accelerator.")
    instead = ("```python\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n```\n\n"
               "`torch.accelerator.synchronize()` (torch 2.6+) also raises on a CPU-only build, hence the guard. "
               "Under torch_xla the equivalent is `torch_xla.sync()`.")

    VALID = [
        Valid("import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"),
        Valid("def wait(cuda):\n    cuda.synchronize()\n"),
        Valid('"""Calls torch.cuda.synchronize() before timing."""\n# torch.cuda.synchronize()\n'
              'logger.debug("torch.cuda.synchronize() done")\n'),
        Valid("import torch\nwith torch.amp.autocast(device_type=dev.type):\n    y = model(x)\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.synchronize()\n", line=2),
        Invalid("import torch as th\nth.cuda.synchronize()\n", line=2),
        Invalid("from torch import cuda as tc\ntc.synchronize()\n", line=2),
        Invalid("from torch.cuda import synchronize\nsynchronize()\n", line=1),
        Invalid("import torch\ncuda = torch.cuda\ncuda.synchronize()\n", line=3),
        # Fix (F14, unsafe, only in a CUDA-clean file): a statement gets the guard, a value does not.
        Invalid("import torch\n\ndef step():\n    torch.cuda.synchronize()  # wait\n    t = timed(lambda: torch.cuda.synchronize())\n",
                line=4, fix_class="unsafe",
                fixed="import torch\n\ndef step():\n    if torch.accelerator.is_available():\n"
                      "        torch.accelerator.synchronize()  # wait\n"
                      "    t = timed(lambda: torch.accelerator.synchronize())\n"),
        Invalid("from torch.cuda import synchronize\nsynchronize()\n", line=2,
                fixed="import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"),
        Invalid("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n", line=3,
                fixed="import torch\nif torch.cuda.is_available():\n    torch.accelerator.synchronize()\n"),
        Invalid("import torch\ntorch.cuda.synchronize()\nstream = torch.cuda.Stream()\n", line=2, fixed=UNCHANGED),
        Invalid("def step():\n    import torch\n    torch.cuda.synchronize()\n", line=3,
                fixed="def step():\n    import torch\n    if torch.accelerator.is_available():\n"
                      "        torch.accelerator.synchronize()\n"),
    ]
