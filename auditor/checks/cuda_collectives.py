from __future__ import annotations

from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.model import Category, Severity


class CudaCollectives(ApiRule):
    code = "LK302"
    name = "cuda-collectives"
    category = Category.DISTRIBUTED
    severity = Severity.MAJOR
    message = "`{api}` drives NCCL or CUDA peer copies directly (single-process collectives): it raises on every target without CUDA."
    suggestion = "{replacement}."
    what = ("Finds imports and uses of `torch.cuda.nccl.*` and `torch.cuda.comm.*` (`broadcast`, `scatter`, "
            "`gather`, `reduce_add`, `*_coalesced`), including `torch.nn.parallel.comm`, which they re-export.")
    why = ("These call NCCL or CUDA peer copies directly and need CUDA tensors; without a CUDA build (TPU, "
           "Trainium, MPS, XPU, CPU) they raise. ROCm maps them to RCCL.")
    instead = ("Use torch.distributed collectives on a process group, which every backend implements:\n\n"
               "```python\ndist.broadcast(tensor, src=0)\ndist.all_reduce(tensor)\n```")

    VALID = [
        Valid('import torch.distributed as dist\ndist.broadcast(t, src=0)\ndist.all_reduce(t)\n'),
        Valid('"""Uses torch.cuda.comm.broadcast internally."""\n# torch.cuda.nccl.all_reduce(x)\n'),
        Valid('import logging\nlogging.info("torch.cuda.comm.broadcast is slow")\n'),
        Valid('def f(comm):\n    return comm.broadcast(x, devices)\n'),
    ]
    INVALID = [
        Invalid('import torch\nouts = torch.cuda.comm.broadcast(t, devices=[0, 1])\n', line=2),
        Invalid('import torch as th\nth.cuda.nccl.all_reduce(inputs)\n', line=2),
        Invalid('from torch.cuda import comm\nparts = comm.scatter(t, devices)\n', line=2),
        Invalid('from torch.cuda.comm import reduce_add\ntotal = reduce_add(parts)\n', line=1),
        Invalid('from torch.nn.parallel import comm\ncomm.broadcast_coalesced(ts, devices)\n', line=2),
    ]
