from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaDeviceProperties(CudaApiRule):
    code = "LK214"
    name = "cuda-device-properties"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` asks for NVIDIA device properties: it raises without CUDA and SM numbers mean nothing elsewhere."
    suggestion = "{replacement}"
    min_torch = "2.4"
    what = ("Finds `torch.cuda.get_device_name()`, `get_device_properties()` and `get_device_capability()`, often "
            "used as gates such as `capability >= (8, 0)`.")
    why = ("Without CUDA the calls raise \"Torch not compiled with CUDA enabled\". On ROCm they return different "
           "numbers (gfx architectures), so SM-version gates for bf16, flash attention or TF32 misfire.")
    instead = ("```python\nprops = torch.get_device_module(dev).get_device_properties()   # torch 2.4+: cuda, xpu, mtia\n"
               "dtypes = torch.accelerator.get_device_capability()[\"supported_dtypes\"]  # torch 2.10+\n```\n\n"
               "Prefer feature probes (try the kernel, fall back) over version gates.")

    VALID = [
        Valid("import torch\ncaps = torch.accelerator.get_device_capability()\n"),
        Valid("def name(cuda):\n    return cuda.get_device_name(0)\n"),
        Valid('"""Needs torch.cuda.get_device_capability() >= (8, 0)."""\n# torch.cuda.get_device_name()\n'
              'logger.warning("torch.cuda.get_device_properties failed")\n'),
    ]
    INVALID = [
        Invalid("import torch\nif torch.cuda.get_device_capability() >= (8, 0):\n    pass\n", line=2),
        Invalid("import torch as th\nmem = th.cuda.get_device_properties(0).total_memory\n", line=2),
        Invalid("from torch import cuda as tc\nname = tc.get_device_name()\n", line=2),
        Invalid("from torch.cuda import get_device_capability\nmajor, minor = get_device_capability()\n", line=2),
    ]
