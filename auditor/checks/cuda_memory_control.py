from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, Invalid, Valid
from auditor.model import Category, Severity


class CudaMemoryControl(CudaApiRule):
    code = "LK206"
    name = "cuda-memory-control"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` drives the CUDA caching allocator and raises on every target without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.10"
    what = ("Finds CUDA allocator control and introspection: `mem_get_info`, `reset_peak_memory_stats`, "
            "`reset_max_memory_allocated`, `memory_summary`, `memory_snapshot`, `_record_memory_history`, "
            "`set_per_process_memory_fraction`, `caching_allocator_*`, `CUDAPluggableAllocator`, "
            "`change_current_allocator`, `MemPool`, `use_mem_pool` and the rest of `torch.cuda.memory`.")
    why = ("Without CUDA these raise (AssertionError, AttributeError or KeyError). Custom allocators and memory "
           "pools have no device-generic API at all.")
    instead = ("```python\nfree, total = torch.accelerator.get_memory_info()   # torch 2.10+\n"
               "if torch.accelerator.is_available():\n    torch.accelerator.reset_peak_memory_stats()   # torch 2.9+\n```\n\n"
               "Snapshots, memory fractions and custom allocators are per backend (`torch.xpu`, `torch.mps` have "
               "their own); keep them behind a CUDA check.")

    VALID = [
        Valid("import torch\nfree, total = torch.accelerator.get_memory_info()\n"),
        Valid("def peak(cuda):\n    cuda.reset_peak_memory_stats()\n    return cuda.mem_get_info()\n"),
        Valid('"""See torch.cuda.memory_summary()."""\n# torch.cuda.mem_get_info()\n'
              'warnings.warn("torch.cuda.mem_get_info() is slow")\n'),
    ]
    INVALID = [
        Invalid("import torch\nfree, total = torch.cuda.mem_get_info()\n", line=2),
        Invalid("import torch as th\nth.cuda.reset_peak_memory_stats()\n", line=2),
        Invalid("from torch import cuda as tc\ntc.set_per_process_memory_fraction(0.5)\n", line=2),
        Invalid("import torch\ntorch.cuda.memory._record_memory_history(max_entries=100000)\n", line=2),
        Invalid("from torch.cuda.memory import CUDAPluggableAllocator\nalloc = CUDAPluggableAllocator(path, 'a', 'f')\n",
                line=2),
        # Fixes (F05 safe; F20, F21 unsafe; F20 guarded).
        Invalid("import torch\ntorch.cuda.reset_max_memory_allocated()\nfree, total = torch.cuda.mem_get_info(device=0)\n",
                line=2, fix_class="safe",
                fixed="import torch\nif torch.accelerator.is_available():\n    torch.accelerator.reset_peak_memory_stats()\n"
                      "free, total = torch.accelerator.get_memory_info(0)\n"),
        Invalid("import torch\ntorch.cuda.set_per_process_memory_fraction(0.5)\n", line=2, fixed=UNCHANGED),
    ]
