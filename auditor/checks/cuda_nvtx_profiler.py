from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaNvtxProfiler(CudaApiRule):
    code = "LK213"
    name = "cuda-nvtx-profiler"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is NVIDIA profiling (NVTX / Nsight) and raises on every target without CUDA."
    suggestion = "{replacement}"
    what = ("Finds `torch.cuda.nvtx.*` (range_push/range_pop/range/mark), `torch.cuda.profiler.*` "
            "(start/stop/profile) and `torch.autograd.profiler.emit_nvtx`.")
    why = ("Without CUDA, NVTX calls raise \"NVTX functions not installed\"; profiler start/stop only drive Nsight. "
           "Unguarded annotations therefore crash runs on TPU, Trainium, MPS, XPU and CPU.")
    instead = ("```python\nwith torch.profiler.record_function(\"step\"):\n    ...\n```\n\n"
               "inside `torch.profiler.profile(activities=[...])`; push/pop pairs become one context manager. "
               "Intel VTune: `torch.autograd.profiler.emit_itt`.")

    VALID = [
        Valid("import torch\nwith torch.profiler.record_function('fwd'):\n    pass\n"),
        Valid("def mark(nvtx):\n    nvtx.range_push('x')\n    nvtx.range_pop()\n"),
        Valid('"""Wrap with torch.cuda.nvtx.range."""\n# torch.cuda.nvtx.range_push("fwd")\n'
              'print("torch.cuda.profiler.start()")\n'),
        Valid("import torch.cuda.nvtx as nvtx\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.nvtx.range_push('fwd')\n", line=2),
        Invalid("import torch as th\nwith th.cuda.nvtx.range('step'):\n    pass\n", line=2),
        Invalid("from torch.cuda import nvtx\nnvtx.range_pop()\n", line=2),
        Invalid("import torch.cuda.profiler as profiler\nprofiler.start()\n", line=2),
        Invalid("import torch\nwith torch.autograd.profiler.emit_nvtx():\n    pass\n", line=2),
    ]
