from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Severity


class TorchXlaPackage(PackageRule):
    code = "LK508"
    name = "torch-xla-package"
    severity = Severity.INFO
    message = "`{package}`: {what}{where}; it ties TPU support to torch-xla's release cadence."
    what = "Finds dependencies on torch-xla / torch_xla[tpu], the XLA-based TPU stack." + SCOPE_NOTE
    why = ("torch-xla trails torch releases (2.9 on PyPI while torch is at 2.13+) and is not a `torch.accelerator` "
           "backend; TPU support is moving to a native backend (TorchTPU).")
    instead = ("Keep device code on `torch.accelerator` and put torch-xla in a TPU-only extra:\n\n```toml\n"
               "[project.optional-dependencies]\ntpu = [\"torch_xla[tpu]\"]\n```")

    VALID = [
        Valid("# torch_xla[tpu]\ntorch\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "torch-xla"\ndependencies = ["torch"]\n', path="pyproject.toml"),
    ]
    INVALID = [
        Invalid("torch_xla[tpu]~=2.5.0\n", path="requirements.txt", line=1),
        Invalid('[project]\nname = "x"\n\n[project.optional-dependencies]\ntpu = ["torch-xla>=2.4"]\n',
                path="pyproject.toml", line=5),
    ]
