from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Severity


class GpuMonitoringPackage(PackageRule):
    code = "LK506"
    name = "gpu-monitoring-package"
    severity = Severity.MINOR
    message = "`{package}` needs the NVIDIA driver{where}: it fails or reports nothing on other targets."
    what = "Finds dependencies on NVIDIA monitoring and profiling tools: pynvml, nvidia-ml-py(3), gpustat, nvitop, GPUtil, nvtx." + SCOPE_NOTE
    why = ("NVML and NVTX are NVIDIA driver libraries: on other targets `nvmlInit()` raises and GPU metrics are "
           "missing. Usually a side concern, but a hard dependency makes every target install it.")
    instead = ("Make it optional and read memory through torch:\n\n```python\n"
               "try:\n    import pynvml\nexcept ImportError:\n    pynvml = None\n"
               "used = torch.accelerator.memory_allocated()  # torch 2.9+; else torch.<backend>.memory_allocated()\n```")

    VALID = [
        Valid("# pynvml\npsutil\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "nvidia-ml-py based"\ndependencies = ["psutil"]\n',
              path="pyproject.toml"),
    ]
    INVALID = [
        Invalid("psutil\npynvml>=11.5\n", path="requirements.txt", line=2),
        Invalid("nvidia-ml-py3\n", path="requirements-dev.txt", line=1),
        Invalid('[project]\nname = "x"\n[project.optional-dependencies]\nmonitor = ["gpustat", "nvitop"]\n',
                path="pyproject.toml", line=4),
        Invalid("from setuptools import setup\nreqs = []\nreqs += ['nvidia-ml-py']\nsetup(install_requires=reqs)\n",
                path="setup.py", line=3),
    ]
