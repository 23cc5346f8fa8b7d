from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaMonitoring(CudaApiRule):
    code = "LK220"
    name = "cuda-monitoring"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` reads GPU telemetry through NVML (amdsmi on ROCm) and raises on {raising_targets}."
    suggestion = "{replacement}"
    what = ("Finds `torch.cuda.utilization()`, `temperature()`, `power_draw()`, `clock_rate()`, "
            "`list_gpu_processes()`, `device_memory_used()` and `memory_usage()`.")
    why = ("These need nvidia-ml-py (or amdsmi on ROCm); without them, and on every non-CUDA build, they raise "
           "ModuleNotFoundError or AssertionError, so monitoring code takes the run down.")
    instead = ("There is no accelerator-level telemetry API. Make monitoring optional (try/except, or only when "
               "`dev.type == \"cuda\"`); XPU has `torch.xpu.utilization()` and friends; for memory use "
               "`torch.accelerator.memory_allocated()` (2.9+).")

    VALID = [
        Valid("import torch\nif torch.accelerator.is_available():\n    used = torch.accelerator.memory_allocated()\n"),
        Valid("def temp(cuda):\n    return cuda.temperature()\n"),
        Valid('"""Reports torch.cuda.utilization()."""\n# torch.cuda.power_draw()\n'
              'print("torch.cuda.utilization() needs pynvml")\n'),
    ]
    INVALID = [
        Invalid("import torch\nutil = torch.cuda.utilization()\n", line=2),
        Invalid("import torch as th\nprint(th.cuda.list_gpu_processes())\n", line=2),
        Invalid("from torch import cuda as tc\nwatts = tc.power_draw(0)\n", line=2),
        Invalid("from torch.cuda import temperature\nt = temperature()\n", line=2),
    ]
