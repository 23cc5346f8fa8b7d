from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaGraphs(CudaApiRule):
    code = "LK212"
    name = "cuda-graphs"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` captures CUDA graphs and raises on every target without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.12"
    what = ("Finds `torch.cuda.CUDAGraph`, `with torch.cuda.graph(g):`, `make_graphed_callables`, "
            "`graph_pool_handle` and `is_current_stream_capturing`.")
    why = ("CUDA graphs exist only on CUDA (and HIP graphs on ROCm). Elsewhere the constructors raise, so "
           "graph-captured inference paths need restructuring, not a rename.")
    instead = ("Let the compiler capture graphs where the backend supports them:\n\n"
               "```python\nmodel = torch.compile(model, mode=\"reduce-overhead\")\n```\n\n"
               "or use `torch.accelerator.Graph()` (torch 2.12+; backend support varies). XPU has `torch.xpu.XPUGraph`.")

    VALID = [
        Valid("import torch\nmodel = torch.compile(model, mode='reduce-overhead')\n"),
        Valid("def capture(cuda, fn):\n    g = cuda.CUDAGraph()\n    with cuda.graph(g):\n        fn()\n"),
        Valid('"""Replays a torch.cuda.CUDAGraph."""\n# g = torch.cuda.CUDAGraph()\n'
              'print("torch.cuda.graph capture failed")\n'),
    ]
    INVALID = [
        Invalid("import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = f(x)\n", line=2),
        Invalid("import torch as th\nf = th.cuda.make_graphed_callables(f, (x,))\n", line=2),
        Invalid("from torch import cuda as tc\nif tc.is_current_stream_capturing():\n    pass\n", line=2),
        Invalid("from torch.cuda import graph_pool_handle\npool = graph_pool_handle()\n", line=2),
    ]
