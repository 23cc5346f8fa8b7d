from __future__ import annotations

from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.context import PythonContext, Reference
from auditor.model import Category, Severity


class NvmlMonitoring(ApiRule):
    code = "LK604"
    name = "nvml-monitoring"
    category = Category.ENV
    severity = Severity.MINOR
    message = "`{api}` talks to the NVIDIA driver through NVML; it fails on {raising_targets}."
    suggestion = "{replacement}. Import the monitor lazily and skip it when NVML is missing."
    what = ("Finds imports of and calls into NVML-based monitoring packages: pynvml (nvidia-ml-py), py3nvml, "
            "nvidia_smi, gpustat and nvitop. Guards such as `if pynvml:` are not reported.")
    why = ("NVML ships with the NVIDIA driver only. On ROCm, XPU, TPU, Trainium, MPS and CPU `nvmlInit()` raises "
           "(or the import fails), so monitoring code that is not optional takes the program down with it.")
    instead = ("Use torch.accelerator for memory numbers and keep vendor monitors optional:\n\n```python\n"
               "used = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0\n```\n\n"
               "Vendor tools: amdsmi (ROCm), xpu-smi (XPU), neuron-top / neuron-monitor (Trainium).")

    VALID = [
        Valid('"""Uses pynvml for monitoring."""\n# import pynvml\n'),
        Valid('import logging\nlogging.info("pynvml.nvmlInit failed")\n'),
        Valid('def f(pynvml):\n    return pynvml.nvmlDeviceGetCount()\n'),
        Valid('import torch\nused = torch.accelerator.memory_allocated()\n'),
    ]
    INVALID = [
        Invalid('import pynvml\npynvml.nvmlInit()\n', line=2),
        Invalid('import pynvml as nv\nh = nv.nvmlDeviceGetHandleByIndex(0)\n', line=2),
        Invalid('from pynvml import nvmlInit\n', line=1),
        Invalid('import gpustat\nstats = gpustat.new_query()\n', line=2),
        Invalid('from nvitop import Device\ndevices = Device.all()\n', line=1),
    ]

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        # Imports and calls are the lock-in; `if pynvml:` or `except pynvml.NVMLError:` only guard it.
        if ref.kind in ("import", "call"):
            super().on_reference(ref, ctx)
