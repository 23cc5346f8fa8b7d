from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaMemoryStats(CudaApiRule):
    code = "LK205"
    name = "cuda-memory-stats"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` returns 0 (or does nothing) on every target without CUDA: memory telemetry and cleanup silently stop."
    suggestion = "{replacement}"
    min_torch = "2.9"
    what = ("Finds `torch.cuda.memory_allocated/max_memory_allocated/memory_reserved/max_memory_reserved/"
            "memory_stats()`, the deprecated `memory_cached/max_memory_cached` aliases and `torch.cuda.empty_cache()`.")
    why = ("Off CUDA these return 0 or `{}` and `empty_cache()` is a no-op: logs show no memory in use, "
           "\"% used\" code divides by zero, and cached device memory is never released.")
    instead = ("```python\nused = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0\n"
               "if torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n```\n\n"
               "The `torch.accelerator` memory functions (torch 2.9+) raise on a CPU-only build, so keep the guard. "
               "They take the device index positionally.")

    VALID = [
        Valid("import torch\nif torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n"),
        Valid("def report(cuda):\n    return cuda.memory_allocated()\n"),
        Valid('"""Logs torch.cuda.memory_allocated()."""\n# torch.cuda.empty_cache()\n'
              'print("call torch.cuda.empty_cache() to free memory")\n'),
    ]
    INVALID = [
        # per-device dispatch: reported in context (xpu takes its own branch), not as main-path lock-in
        Invalid("import torch\nif is_xpu_available():\n    torch.xpu.empty_cache()\nelif is_cuda_available():\n"
                "    torch.cuda.empty_cache()\n", line=5, context="guarded"),
        Invalid("import torch\ntorch.cuda.empty_cache()\n", line=2),
        Invalid("import torch as th\nused = th.cuda.max_memory_allocated() / 2**30\n", line=2),
        Invalid("from torch import cuda as tc\nstats = tc.memory_stats()\n", line=2),
        Invalid("from torch.cuda import memory_reserved\nr = memory_reserved()\n", line=2),
        Invalid("import torch\nc = torch.cuda.memory.memory_cached(0)\n", line=2),
        Invalid("import torch\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\nelse:\n    gc.collect()\n",
                line=3),
        # Fixes (F05 safe; F18, F19 unsafe and guarded: the accelerator calls raise without an accelerator).
        Invalid("import torch\ntorch.cuda.empty_cache()\nused = torch.cuda.max_memory_allocated(device=dev) / 2**30\n"
                "stats = torch.cuda.memory_stats()\n", line=2, fix_class="unsafe",
                fixed="import torch\nif torch.accelerator.is_available():\n    torch.accelerator.empty_cache()\n"
                      "used = (torch.accelerator.max_memory_allocated(dev) if torch.accelerator.is_available() else 0)"
                      " / 2**30\nstats = (torch.accelerator.memory_stats() if torch.accelerator.is_available() else {})\n"),
        Invalid("import torch\nc = torch.cuda.memory.memory_cached(0)\n", line=2, fix_class="safe",
                fixed="import torch\nc = (torch.accelerator.memory_reserved(0) if torch.accelerator.is_available() else 0)\n"),
        Invalid("import torch\nprint(torch.cuda.empty_cache())\nx = 1; torch.cuda.empty_cache()\n", line=2,
                fixed=UNCHANGED),
    ]
