from __future__ import annotations

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudnnDeterminism(CudaApiRule):
    code = "LK217"
    name = "cudnn-determinism"
    category = Category.CUDA_API
    assign_is_use = True  # setting the flag is the lock-in
    severity = Severity.MINOR
    message = "`{api}` makes only cuDNN/MIOpen convolutions deterministic; other backends stay silently nondeterministic."
    suggestion = "{replacement}"
    min_torch = "2.0"
    what = "Finds `torch.backends.cudnn.deterministic` (usually `= True` next to `benchmark = False`)."
    why = ("Reproducibility code that relies on this flag loses its guarantee on TPU, Trainium, MPS, XPU and "
           "CPU: nothing warns, results just differ run to run.")
    instead = ("```python\ntorch.use_deterministic_algorithms(True)\n```\n\nIt is stricter (raises on ops without a "
               "deterministic implementation); on CUDA also set `CUBLAS_WORKSPACE_CONFIG=:4096:8`.")

    VALID = [
        Valid("import torch\ntorch.use_deterministic_algorithms(True)\n"),
        Valid("def repro(cudnn):\n    cudnn.deterministic = True\n"),
        Valid('"""Sets torch.backends.cudnn.deterministic."""\n# torch.backends.cudnn.deterministic = True\n'
              'logger.info("torch.backends.cudnn.deterministic=True")\n'),
    ]
    INVALID = [
        Invalid("import torch\ntorch.backends.cudnn.deterministic = True\n", line=2),
        Invalid("import torch.backends.cudnn as cudnn\ncudnn.deterministic = True\n", line=2),
        Invalid("import torch as th\nth.backends.cudnn.deterministic = True\n", line=2),
        Invalid("from torch.backends import cudnn\ncudnn.deterministic = True\n", line=2),
    ]
