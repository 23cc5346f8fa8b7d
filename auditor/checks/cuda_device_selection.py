from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaDeviceSelection(CudaApiRule):
    code = "LK203"
    name = "cuda-device-selection"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` selects a CUDA device and raises on every target without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.8"
    what = ("Finds `torch.cuda.current_device()`, `torch.cuda.set_device(i)`, `with torch.cuda.device(i):` and "
            "`torch.cuda.device_of(t)`.")
    why = ("These sit on every DDP start-up path. Without CUDA they raise (AssertionError, AttributeError or "
           "RuntimeError), so TPU, Trainium, MPS, XPU and CPU runs stop before training starts.")
    instead = ("```python\nif torch.accelerator.is_available():           # it raises without an accelerator\n"
               "    torch.accelerator.set_device_index(local_rank)   # torch 2.7+ (2.6: set_device_idx)\n"
               "idx = torch.accelerator.current_device_index()   # torch 2.7+ (2.6: current_device_idx)\n"
               "with torch.accelerator.device_index(i):          # torch 2.8+\n    ...\n```\n\n"
               "`set_device_index` and `device_index` take an int; pass `dev.index` for a `torch.device`.")

    VALID = [
        Valid("import torch\ntorch.accelerator.set_device_index(local_rank)\n"
              "with torch.accelerator.device_index(0):\n    pass\n"),
        Valid("def setup(cuda, rank):\n    cuda.set_device(rank)\n    return cuda.current_device()\n"),
        Valid('"""Call torch.cuda.set_device(rank) first."""\n# torch.cuda.set_device(rank)\n'
              'print("torch.cuda.current_device() failed")\n'),
        Valid("import torch\ndevice = torch.device(dev.type, rank)\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.set_device(local_rank)\n", line=2),
        Invalid("import torch as th\nidx = th.cuda.current_device()\n", line=2),
        Invalid("import torch\nwith torch.cuda.device(1):\n    pass\n", line=2),
        Invalid("from torch import cuda as tc\nwith tc.device_of(x):\n    pass\n", line=2),
        Invalid("from torch.cuda import set_device\nset_device(0)\n", line=2),
        # Fixes (F15-F17, unsafe, only in a CUDA-clean file).
        Invalid("import torch\ntorch.cuda.set_device(device=local_rank)\nidx = torch.cuda.current_device()\n"
                "with torch.cuda.device(1):\n    pass\n", line=2, fix_class="unsafe",
                fixed="import torch\nif torch.accelerator.is_available():\n    torch.accelerator.set_device_index(local_rank)\n"
                      "idx = (torch.accelerator.current_device_index() if torch.accelerator.is_available() else 0)\n"
                      "with torch.accelerator.device_index(1 if torch.accelerator.is_available() else None):\n"
                      "    pass\n"),
        # The index is the one selected on NVIDIA; without an accelerator the block runs (None: no switch).
        Invalid("import torch as th\nwith th.cuda.device(local_rank):\n    pass\nwith th.cuda.device(None):\n    pass\n",
                line=2, fix_class="unsafe",
                fixed="import torch as th\nwith th.accelerator.device_index(local_rank if th.accelerator.is_available() "
                      "else None):\n    pass\nwith th.accelerator.device_index(None):\n    pass\n"),
        # Left alone: device_index takes an int or None only; device_of has no counterpart.
        Invalid('import torch\ngpu = torch.device("cuda", 1)\nwith torch.cuda.device(gpu):\n    pass\n', line=3,
                fixed=UNCHANGED),
        Invalid("import torch\n\ndef run(gpu: torch.device):\n    with torch.cuda.device(gpu):\n        pass\n", line=4,
                fixed=UNCHANGED),
        Invalid("import torch\n\ndef run(x):\n    gpu = x.device\n    with torch.cuda.device(gpu):\n        pass\n", line=5,
                fixed=UNCHANGED),
        Invalid("import torch\nwith torch.cuda.device(dev):\n    pass\nwith torch.cuda.device_of(x):\n    pass\n", line=2,
                fixed=UNCHANGED),
    ]
