from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from auditor.checks.base import UNCHANGED, ApiRule, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan
from auditor.model import Category, Severity
from auditor.python.syntax import is_cuda_device, keyword, positional, string_value

if TYPE_CHECKING:
    from auditor.context import PythonContext, Reference
    from auditor.fix.plan import Reported, Rewriter

FIX_ID = "F43"
# Autocast and the scaler: their device is read where the `with` or the scaler runs. The custom_fwd /
# custom_bwd decorators are evaluated on import, where a device choice must not run.
_REWRITTEN = ("autocast", "GradScaler")


def disables_autocast(qualified: str, node: cst.Call) -> bool:
    """`autocast("cuda", enabled=False)`: a region forced to full precision (not mixed precision)."""
    enabled = keyword(node, "enabled")
    return (qualified.rsplit(".", 1)[-1] == "autocast" and enabled is not None
            and isinstance(enabled.value, cst.Name) and enabled.value.value == "False")


class CudaAutocastDevice(ApiRule):
    code = "LK106"
    name = "cuda-autocast-device"
    category = Category.DEVICE
    severity = Severity.MINOR
    subject = "`{api}`"
    message = ("`{api}` ties mixed precision to CUDA: elsewhere autocast (or the scaler) warns and turns off, so the "
               "code silently runs in full precision.")
    suggestion = "{replacement}"
    min_torch = "2.4"
    tokens = ("cuda",)
    disabling_only = False  # `autocast("cuda", enabled=False)` is cuda-autocast-disabled's
    rewritten = "AMP then also runs off NVIDIA"  # what the fix's rewrite changes elsewhere
    what = ("Finds mixed precision pinned to CUDA through `torch.amp`: `torch.autocast(\"cuda\")`, "
            "`torch.amp.autocast(device_type=\"cuda\")`, `torch.amp.GradScaler(\"cuda\")`, "
            "`torch.amp.custom_fwd/custom_bwd(device_type=\"cuda\")` (also as decorators), and the helpers that "
            "mean CUDA without saying so: `torch.get_autocast_gpu_dtype()`, `torch.set_autocast_gpu_dtype()`, "
            "`torch.is_autocast_enabled()` and `torch.set_autocast_enabled(flag)` without a device type.")
    why = ("Without CUDA, `autocast(\"cuda\")` warns (\"CUDA is not available ... Disabling autocast\") and runs "
           "the block in full precision, and `GradScaler(\"cuda\")` disables itself: nothing raises, but AMP "
           "silently stops on TPU, Trainium, MPS, XPU and CPU (`autocast(\"cuda\", enabled=False)`, a full-precision "
           "region, is cuda-autocast-disabled). The implicit-CUDA helpers read or set the CUDA autocast state "
           "only (deprecated since torch 2.4 in favour of the device-type forms).")
    instead = ("```python\nwith torch.amp.autocast(dev.type):\n    loss = model(x)\nscaler = torch.amp.GradScaler(dev.type)\n"
               "dtype = torch.get_autocast_dtype(dev.type)\nif torch.is_autocast_enabled(dev.type):\n    ...\n```\n\n"
               "`dtype=None` picks each device's default (bf16 on CPU, XLA and HPU; fp16 on CUDA, XPU and MPS).")

    VALID = [
        Valid("import torch\nwith torch.autocast(device_type=dev.type):\n    pass\n"),
        Valid("import torch\nwith torch.amp.autocast('cpu', dtype=torch.bfloat16):\n    pass\n"),
        Valid("import torch\nok = torch.is_autocast_enabled(dev.type)\nd = torch.get_autocast_dtype('cuda')\n"),
        Valid('print("torch.autocast(\\"cuda\\")")\n# with torch.autocast("cuda"):\n'),
        Valid("def f(torch):\n    return torch.autocast('cuda')\n"),
        # a full-precision region: cuda-autocast-disabled
        Valid("import torch\n\n@torch.amp.autocast('cuda', enabled=False)\ndef f(x):\n    return x\n"),
    ]
    INVALID = [
        Invalid("import torch\nwith torch.autocast('cuda'):\n    pass\n", line=2),
        Invalid("from torch.amp import autocast\nwith autocast(device_type='cuda', dtype=torch.bfloat16):\n    pass\n",
                line=2),
        Invalid("import torch\nscaler = torch.amp.GradScaler('cuda')\n", line=2),
        Invalid("import torch\n\n@torch.amp.custom_fwd(device_type='cuda')\ndef forward(ctx, x):\n    return x\n", line=3),
        Invalid("import torch\ndtype = torch.get_autocast_gpu_dtype()\n", line=2),
        Invalid("import torch\nif torch.is_autocast_enabled():\n    pass\n", line=2),
        Invalid("import torch\ntorch.set_autocast_gpu_dtype(torch.bfloat16)\n", line=2),
        Invalid("import torch\nif torch.cuda.is_available():\n    with torch.autocast('cuda'):\n        pass\n",
                line=3, context="guarded"),
        # Fix (F43, unsafe): with --fix, which knows the project's device (here it creates device_choice.py).
        Invalid("import torch\nscaler = torch.amp.GradScaler('cuda', enabled=True)\nwith torch.autocast(device_type='cuda'):"
                "\n    pass\n", line=2,
                fixed="import torch\nfrom device_choice import get_device\nscaler = torch.amp.GradScaler(get_device().type, "
                      "enabled=True)\nwith torch.autocast(device_type=get_device().type):\n    pass\n"),
        # ... not a decorator (it runs on import), nor a device that is not the plain "cuda".
        Invalid("import torch\n\n@torch.amp.custom_fwd(device_type='cuda')\ndef forward(ctx, x):\n    return x\n", line=3,
                fixed=UNCHANGED),
    ]

    FIXES = (FixSpec("F43", "unsafe", '`autocast("cuda")` / `autocast(device_type="cuda")` / `GradScaler("cuda")` -> '
                     "`get_device().type`: the project's device type (\"cuda\" on NVIDIA, so the same AMP there); "
                     "unsafe: elsewhere AMP and loss scaling now run where they silently turned off (bf16 on the "
                     "CPU, fp16 on MPS/XPU by default)", "2.4", device_owner=True),)

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        qualified = ctx.qualify(node.func)
        if qualified is None:
            return
        table = ctx.catalogue.table("device").get("amp_functions", {})
        spec = table.get(qualified)
        if spec is None or self.disabling_only != disables_autocast(qualified, node):
            return
        index, name = spec
        arg = keyword(node, name) or (positional(node, index) if index >= 0 else None)
        if arg is not None and is_cuda_device(arg.value):
            short = qualified.removeprefix("torch.")
            ctx.report(self, node, api=f"torch.{short}(\"cuda\")",
                       replacement=self.instead_of(short))

    @staticmethod
    def instead_of(short: str) -> str:
        """The suggestion for `torch.<short>("cuda")`."""
        return (f"`torch.{short}(dev.type)` with the device chosen once (e.g. "
                f"`torch.accelerator.current_accelerator() or torch.device(\"cpu\")`)")

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        """The implicit-CUDA helpers; `is_autocast_enabled(dev)` and `set_autocast_enabled(dev, flag)` name their device."""
        call = ref.call
        if ref.kind != "call" or call is None or any(arg.star for arg in call.args):
            return
        member = ref.qualified.rsplit(".", 1)[-1]
        given = sum(1 for arg in call.args if arg.keyword is None) + (keyword(call, "device_type") is not None)
        if member == "is_autocast_enabled" and given >= 1:
            return
        if member == "set_autocast_enabled" and given >= 2:
            return
        super().on_reference(ref, ctx)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """The "cuda" literal of autocast or a scaler becomes the project's device type; the
        dtype, `enabled=` and every other argument stay."""
        call = report.node
        if not isinstance(call, cst.Call):
            return None
        qualified = rewriter.ctx.qualify(call.func) or ""
        spec = rewriter.ctx.catalogue.table("device").get("amp_functions", {}).get(qualified)
        if spec is None:
            return None
        if qualified.rsplit(".", 1)[-1] not in _REWRITTEN:
            return FixPlan.held("not rewritten: a custom_fwd/custom_bwd decorator runs on import, before the program "
                                "chooses its device", FIX_ID)
        index, name = spec
        arg = keyword(call, name) or (positional(call, index) if index >= 0 else None)
        if arg is None or string_value(arg.value) != "cuda":
            return FixPlan.held('not rewritten: the device is not the plain string "cuda"', FIX_ID)
        found = rewriter.device_type_expr(at=call)
        if found is None:
            reason = rewriter.device_unavailable()
            return FixPlan.held(f"not rewritten: {reason}", FIX_ID) if reason and rewriter.device_known() else None
        text, imports = found
        return FixPlan("unsafe", f"Replace `\"cuda\"` with `{text}` (the project's device type: {self.rewritten})",
                       [rewriter.replace(arg.value, text), *imports], "2.4", fix_id=FIX_ID, device=True)
