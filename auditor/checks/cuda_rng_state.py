from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaRngState(CudaApiRule):
    code = "LK208"
    name = "cuda-rng-state"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` reads or writes CUDA generator state; it raises (or silently does nothing) without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.4"
    what = ("Finds `torch.cuda.get_rng_state(_all)`, `set_rng_state(_all)`, `initial_seed()`, "
            "`default_generators` and the rest of `torch.cuda.random`, usually in checkpoint/resume code.")
    why = ("`get_rng_state` raises without CUDA, so saving a checkpoint crashes on TPU, Trainium, MPS, XPU and "
           "CPU; `set_rng_state` silently queues and never restores anything.")
    instead = ("```python\nmod = torch.get_device_module(dev)          # torch 2.4+\nstate = mod.get_rng_state()\n"
               "with torch.random.fork_rng(device_type=dev.type):\n    ...\n```")

    VALID = [
        Valid("import torch\nstate = torch.get_device_module(dev).get_rng_state()\n"),
        Valid("def save(cuda):\n    return cuda.get_rng_state_all()\n"),
        Valid('"""Stores torch.cuda.get_rng_state()."""\n# torch.cuda.set_rng_state(s)\n'
              'logger.info("restoring torch.cuda.set_rng_state_all")\n'),
    ]
    INVALID = [
        Invalid("import torch\nckpt['cuda_rng'] = torch.cuda.get_rng_state_all()\n", line=2),
        Invalid("import torch as th\nth.cuda.set_rng_state(state)\n", line=2),
        Invalid("from torch import cuda as tc\ngen = tc.default_generators[0]\n", line=2),
        Invalid("from torch.cuda import get_rng_state\ns = get_rng_state()\n", line=2),
    ]
