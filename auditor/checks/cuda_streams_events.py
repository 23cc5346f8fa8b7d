from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaStreamsEvents(CudaApiRule):
    code = "LK211"
    name = "cuda-streams-events"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` uses CUDA streams or events and raises on every target without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.6"
    what = ("Finds `torch.cuda.Stream`, `with torch.cuda.stream(s):`, `current_stream()`, `default_stream()`, "
            "`set_stream()`, `ExternalStream`, `StreamContext` and `torch.cuda.Event` (timing and overlap code).")
    why = ("`torch.cuda.Stream()` and `torch.cuda.Event()` raise without CUDA (RuntimeError \"dummy base class\"), "
           "and so do `current_stream()`/`default_stream()`: overlap and benchmark code cannot run elsewhere.")
    instead = ("```python\ns = torch.Stream()                      # torch 2.4+, current accelerator\n"
               "with s:                                 # torch 2.7+\n    ...\n"
               "torch.accelerator.current_stream().synchronize()   # torch 2.6+\n"
               "start = torch.Event(enable_timing=True)  # torch 2.4+, where the backend has events\n```\n\n"
               "For portable timing use `torch.accelerator.synchronize()` with `time.perf_counter()`.")

    VALID = [
        Valid("import torch\ns = torch.Stream()\nwith s:\n    pass\ntorch.accelerator.current_stream().synchronize()\n"),
        Valid("def overlap(cuda):\n    s = cuda.Stream()\n    return cuda.current_stream()\n"),
        Valid('"""Runs on a torch.cuda.Stream."""\n# with torch.cuda.stream(s):\n'
              'logger.info("waiting on torch.cuda.current_stream()")\n'),
    ]
    INVALID = [
        Invalid("import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\n", line=3),
        Invalid("import torch as th\nth.cuda.current_stream().wait_stream(s)\n", line=2),
        Invalid("from torch import cuda as tc\nstart = tc.Event(enable_timing=True)\n", line=2),
        Invalid("from torch.cuda import Stream\ns = Stream(priority=-1)\n", line=2),
        Invalid("import torch\nlo, hi = torch.cuda.Stream.priority_range()\n", line=2),
        # Fix (F30, unsafe, only in a CUDA-clean file): torch.Event takes keywords only.
        Invalid("import torch\nstart = torch.cuda.Event(True)\nend = torch.cuda.Event(enable_timing=True)\n", line=2,
                fix_class="unsafe",
                fixed="import torch\nstart = torch.Event(enable_timing=True)\nend = torch.Event(enable_timing=True)\n"),
        # Left alone: IPC handles (`external=`) and isinstance checks would stop matching.
        Invalid("import torch\ne = torch.cuda.Event(external=True)\n", line=2, fixed=UNCHANGED),
        Invalid("import torch\ne = torch.cuda.Event()\nok = isinstance(e, torch.cuda.Event)\n", line=2, fixed=UNCHANGED),
    ]
