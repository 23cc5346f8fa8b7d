from __future__ import annotations

from auditor.checks.base import UNCHANGED, ApiRule, Invalid, Valid
from auditor.model import Category, Severity


class CudaAvailabilityCheck(ApiRule):
    code = "LK201"
    name = "cuda-availability-check"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is False on {degrading_targets}, so there this path silently runs on the CPU."
    suggestion = "`{replacement}`"
    min_torch = "2.6"
    what = "Finds `torch.cuda.is_available()` and `torch.cuda.is_initialized()` used as the gate for the GPU path."
    why = ("On TPU, Trainium, MPS and XPU the check returns False, so code written as \"use the GPU if there is "
           "one\" quietly trains on the CPU there.")
    instead = "```python\nif torch.accelerator.is_available():\n    ...\n```\n\n`torch.accelerator` (torch 2.6+) covers CUDA, ROCm, XPU, MPS and out-of-tree backends such as TorchTPU and TorchNeuron."

    VALID = [
        Valid("import torch\nif torch.accelerator.is_available():\n    pass\n"),
        Valid("def f(cuda):\n    return cuda.is_available()\n"),
        Valid('"""Call torch.cuda.is_available() first."""\n# torch.cuda.is_available()\n'),
        Valid('import torch\nlogger.info("torch.cuda.is_available() is False")\n'),
    ]
    INVALID = [
        Invalid("import torch\nif torch.cuda.is_available():\n    pass\n", line=2),
        Invalid("import torch as th\nuse_gpu = th.cuda.is_available()\n", line=2),
        Invalid("from torch import cuda as tc\nok = tc.is_available()\n", line=2),
        Invalid("from torch.cuda import is_available\nok = is_available()\n", line=1),
        # Fix (F12, unsafe, only in a CUDA-clean file).
        Invalid("import torch as th\nuse_gpu = th.cuda.is_available()\nrun(check=th.cuda.is_available)\n", line=2,
                fix_class="unsafe",
                fixed="import torch as th\nuse_gpu = th.accelerator.is_available()\nrun(check=th.accelerator.is_available)\n"),
        Invalid("from torch.cuda import is_available\nok = is_available()\n", line=2,
                fixed="import torch\nok = torch.accelerator.is_available()\n"),
        # Left alone: the CUDA-only call in the branch would then run on MPS/XPU and raise there.
        Invalid("import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n", line=2,
                fix_class="display", fixed=UNCHANGED),
        # Left alone: the file already chooses per backend; an accelerator check would take the CUDA
        # branch on XPU too, ahead of the branch written for it.
        Invalid("import torch\nif torch.cuda.is_available():\n    n = 1\nelif is_xpu_available():\n    n = torch.xpu.device_count()\n",
                line=2, fix_class="display", fixed=UNCHANGED),
        # Left alone: the branch it decides names CUDA (a CUDA backend, a CUDA-only message).
        Invalid('import torch\nif not torch.cuda.is_available():\n    raise RuntimeError("CUDA is required by this backend")\n',
                line=2, fix_class="display", fixed=UNCHANGED),
        Invalid("import torch\nif torch.cuda.is_available():\n    from executorch.backends.cuda import CudaBackend\n",
                line=2, fixed=UNCHANGED),
        # Left alone: a stated CUDA requirement (an assertion's message, a skip's reason) is not a device choice.
        Invalid('import torch\nassert torch.cuda.is_available(), "this benchmark requires CUDA"\n', line=2,
                fix_class="display", fixed=UNCHANGED),
        Invalid('import pytest\nimport torch\n\n@pytest.mark.skipif(not torch.cuda.is_available(), reason="requires CUDA")\n'
                "def test_a():\n    pass\n", line=4, fixed=UNCHANGED),
        Invalid('import torch\nassert torch.cuda.is_available(), "needs a GPU"\n', line=2,
                fixed='import torch\nassert torch.accelerator.is_available(), "needs a GPU"\n'),
        # The branch's own torch.cuda calls are findings of their own: they do not hold the check back.
        Invalid("import torch\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n", line=2,
                fixed="import torch\nif torch.accelerator.is_available():\n    torch.cuda.empty_cache()\n"),
    ]
