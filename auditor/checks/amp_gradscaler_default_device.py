from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.checks.base import ApiRule, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan
from auditor.model import Category, Severity
from auditor.python.syntax import keyword, positional

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference
    from auditor.fix.plan import Reported, Rewriter


class AmpGradScalerDefaultDevice(ApiRule):
    code = "LK210"
    name = "amp-gradscaler-default-device"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}()` without a device defaults to \"cuda\": off CUDA the scaler warns and disables itself."
    suggestion = "{replacement}"
    min_torch = "2.3"
    tokens = ("gradscaler",)
    what = "Finds `torch.amp.GradScaler()` / `torch.GradScaler()` calls that pass no device (positionally or as `device=`)."
    why = ("The device-generic scaler still defaults to `device=\"cuda\"`. On MPS, XPU and the other targets it "
           "warns \"CUDA is not available. Disabling\" and loss scaling silently stops.")
    instead = "```python\nscaler = torch.amp.GradScaler(dev.type)\n```"

    VALID = [
        Valid("import torch\nscaler = torch.amp.GradScaler(dev.type)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler(device=device.type, enabled=True)\n"),
        Valid("from torch.amp import GradScaler\nscaler = GradScaler(device_type, init_scale=2.0)\n"),
        Valid("import torch\nscaler = torch.amp.GradScaler(*args)\ns2 = torch.amp.GradScaler(**cfg)\nok = isinstance(s, torch.amp.GradScaler)\n"),
        Valid('"""Use torch.amp.GradScaler()."""\n# scaler = torch.amp.GradScaler()\n'),
    ]
    INVALID = [
        Invalid("import torch\nscaler = torch.amp.GradScaler()\n", line=2),
        Invalid("import torch\nscaler = torch.GradScaler(enabled=use_amp)\n", line=2),
        Invalid("from torch.amp import GradScaler\nscaler = GradScaler(init_scale=1024)\n", line=2),
        Invalid("import torch as th\nscaler = th.amp.GradScaler(enabled=True, growth_interval=100)\n", line=2),
        # Fix (F29): the implicit device made explicit.
        Invalid("import torch\nscaler = torch.amp.GradScaler(enabled=use_amp)\n", line=2, fix_class="safe",
                fixed='import torch\nscaler = torch.amp.GradScaler("cuda", enabled=use_amp)\n'),
        Invalid("from torch.amp import GradScaler\nscaler = GradScaler()\n", line=2,
                fixed='from torch.amp import GradScaler\nscaler = GradScaler("cuda")\n'),
    ]

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        call = ref.call
        if ref.kind != "call" or call is None:
            return  # imports, isinstance checks and subclassing choose no device
        if any(arg.star for arg in call.args):
            return  # the device may be among the unpacked arguments
        if positional(call, 0) is None and keyword(call, "device") is None:
            super().on_reference(ref, ctx)

    FIXES = (FixSpec("F29", "safe", '`torch.amp.GradScaler()` -> `torch.amp.GradScaler("cuda")`: the implicit '
                     "default made explicit (then choose `dev.type`)", "2.3"),)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        call = report.ref.call if report.ref is not None else None
        if call is None:
            return None
        return FixPlan("safe", 'Pass the device the scaler already uses: `"cuda"`',
                       [rewriter.prepend_args(call, '"cuda"')], "2.3", fix_id="F29")
