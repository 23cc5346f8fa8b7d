from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid, notebook_example
from auditor.model import Severity


class MultiBackendGpuPackage(PackageRule):
    code = "LK507"
    name = "multi-backend-gpu-package"
    severity = Severity.MINOR
    message = "`{package}`: {what}{where}."
    what = ("Finds GPU packages that support several backends only in recent or per-target builds: bitsandbytes "
            "without a multi-backend version floor, explicit `triton` pins and `pytorch-triton`, faiss-gpu*.") + SCOPE_NOTE
    why = ("They can run beyond NVIDIA, but only with the right version or wheel per target: an old bitsandbytes is "
           "CUDA-only, a hand-pinned triton fights the one each torch build pins, faiss-gpu has no non-CUDA wheel.")
    instead = ("```text\nbitsandbytes>=0.50   # CPU, ROCm and XPU libraries bundled\n"
               "faiss-cpu; sys_platform == 'darwin'\n# no triton pin: torch brings the matching one\n```")

    VALID = [
        Valid("bitsandbytes>=0.50.2\ntriton\nfaiss-cpu\npytorch-triton-rocm\n", path="requirements.txt"),
        Valid("# bitsandbytes==0.41\ntorch\n", path="requirements.txt"),
    ]
    INVALID = [
        Invalid("bitsandbytes==0.41.1\n", path="requirements.txt", line=1),
        Invalid("torch\nbitsandbytes\n", path="requirements.txt", line=2),
        Invalid("triton==2.1.0\n", path="requirements.txt", line=1),
        Invalid("faiss-gpu-cu12\n", path="requirements.txt", line=1),
        Invalid('[project]\nname = "x"\ndependencies = ["pytorch-triton==3.2.0+git4b3bb1f8"]\n', path="pyproject.toml",
                line=3),
        Invalid(notebook_example(("code", "%pip install bitsandbytes accelerate\n"), ("code", "import bitsandbytes as bnb\n")),
                path="notebooks/quantize.ipynb", line=1),
    ]
