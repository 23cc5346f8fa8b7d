from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference


class CudaApiOther(CudaApiRule):
    code = "LK299"
    name = "cuda-api-other"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is a CUDA-only runtime API or op and raises on every target without CUDA."
    suggestion = "{replacement}"
    what = ("Finds every other use of a `torch.cuda` attribute (`ipc_collect`, `set_sync_debug_mode`, `cudart`, "
            "`tunable`, `init`, `_sleep`, ...) that no more specific rule covers, the private CUDA bindings "
            "(`torch._C._cuda_*`) and the cuDNN-only ops (`torch.cudnn_*`, `torch.ops.aten.cudnn_*`). Plain "
            "`import torch.cuda` and the bare module (e.g. `{\"cuda\": torch.cuda}` in a dispatch table) are not "
            "reported.")
    why = "Without CUDA these raise (\"Torch not compiled with CUDA enabled\" or a missing `torch._C._cuda_*`)."
    instead = ("Look for a `torch.accelerator.*` or `torch.get_device_module(dev).*` equivalent; where there is "
               "none, keep the call behind a CUDA check (`if dev.type == \"cuda\":`).")

    VALID = [
        Valid("import torch.cuda\nimport torch\nmods = {'cuda': torch.cuda, 'xpu': torch.xpu}\n"),
        Valid("def f(cuda):\n    cuda.ipc_collect()\n"),
        Valid('"""Call torch.cuda.ipc_collect()."""\n# torch.cuda.cudart().cudaProfilerStart()\n'
              'print("torch.cuda.init() failed")\n'),
        Valid("import torch\ntry:\n    pass\nexcept torch.cuda.OutOfMemoryError:\n    pass\n"),
        Valid("import torch\nwith torch.cuda.amp.autocast():\n    pass\n"),
        Valid("import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"),
        Valid("import torch\nok = torch._C._get_cudnn_enabled()\n"
              "y = torch.convolution(x, w, None, (1,), (0,), (1,), False, (0,), 1)\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.ipc_collect()\n", line=2),
        Invalid("import torch as th\nth.cuda.set_sync_debug_mode(1)\n", line=2),
        Invalid("from torch import cuda as tc\ntc.cudart().cudaProfilerStart()\n", line=2),
        Invalid("import torch\ntorch.cuda.tunable.enable(True)\n", line=2),
        Invalid("import torch\nidx = torch._C._cuda_getDevice()\n", line=2),
        Invalid("import torch\ny = torch.cudnn_convolution(x, w, (1, 1), (1, 1), (1, 1), 1, False, False, True)\n",
                line=2),
        Invalid("import torch\nout = torch.ops.aten.cudnn_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)\n", line=2),
    ]

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        ignored = ctx.catalogue.table("cuda_api").get("cuda-api-other", {}).get("ignore", ())
        if any(_covers(skip, ref.qualified) for skip in ignored):
            return
        super().on_reference(ref, ctx)


def _covers(pattern: str, qualified: str) -> bool:
    """`a.b` matches only itself; `a.b.*` matches `a.b` and everything below it."""
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return qualified == base or qualified.startswith(base + ".")
    return qualified == pattern
