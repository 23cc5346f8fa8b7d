from __future__ import annotations

from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.checks.cuda_autocast_device import CudaAutocastDevice
from auditor.model import Severity


class CudaAutocastDisabled(CudaAutocastDevice):
    """`autocast("cuda", enabled=False)`: a region meant to run in full precision inside mixed
    precision. It is found as cuda-autocast-device is, and rewritten the same way (the project's
    device type); what differs is what happens elsewhere, so its message, effects and weight do."""

    code = "LK108"
    name = "cuda-autocast-disabled"
    severity = Severity.MINOR
    disabling_only = True
    rewritten = "the full-precision region then holds off NVIDIA too"
    message = ("`{api}` with `enabled=False` turns off CUDA autocast only: on other devices it does nothing, so "
               "under their own autocast this region is not kept in full precision.")
    what = ("Finds full-precision regions pinned to CUDA: `torch.autocast(\"cuda\", enabled=False)` and "
            "`torch.amp.autocast(device_type=\"cuda\", enabled=False)`, as a `with` or a decorator.")
    why = ("Code that runs under mixed precision forces a sensitive step (a loss, a normalisation, a diffusion "
           "schedule) back to float32 with `autocast(\"cuda\", enabled=False)`. Off CUDA that call disables nothing: "
           "the program still runs, and where an autocast of the device's own type is active (bf16 on TPU, the "
           "CPU or XPU) the step runs in reduced precision, which changes numerics slightly. Nothing is lost "
           "where no autocast runs.")
    instead = ("```python\n@torch.amp.autocast(x.device.type, enabled=False)  # or the device chosen once: dev.type\n"
               "def q_sample(self, x_start, t):\n    ...\n```")

    FIXES = (FixSpec("F43", "unsafe", '`autocast("cuda", enabled=False)` -> `autocast(get_device().type, enabled=False)`: '
                     "the project's device type (the same region on NVIDIA); unsafe: elsewhere the step now runs in "
                     "full precision where it ran under the device's own autocast", "2.4", device_owner=True),)

    @staticmethod
    def instead_of(short: str) -> str:
        return (f"`torch.{short}(x.device.type, enabled=False)` (the type of the tensors in the region), or the "
                "device chosen once: the region then stays in full precision on every device")

    VALID = [
        Valid("import torch\nwith torch.autocast(device_type=x.device.type, enabled=False):\n    pass\n"),
        Valid("import torch\nwith torch.autocast('cpu', enabled=False):\n    pass\n"),
        # trap: mixed precision itself, or a flag that may enable it (cuda-autocast-device)
        Valid("import torch\nwith torch.autocast('cuda'):\n    pass\n"),
        Valid("import torch\nwith torch.autocast('cuda', enabled=use_amp):\n    pass\n"),
        Valid('# with torch.autocast("cuda", enabled=False):\nprint("autocast(\'cuda\', enabled=False)")\n'),
    ]
    INVALID = [
        Invalid("import torch\n\n@torch.amp.autocast('cuda', enabled=False)\ndef f(x):\n    return x\n", line=3),
        Invalid("from torch import autocast\n\n@autocast('cuda', enabled = False)\ndef q_sample(x):\n    return x\n",
                line=3),
        Invalid("import torch as th\nwith th.amp.autocast(device_type='cuda', enabled=False):\n    pass\n", line=2),
        # Fix (F43, unsafe, with --fix): the project's device type, so the region holds everywhere.
        Invalid("import torch\nwith torch.autocast('cuda', enabled=False):\n    pass\n", line=2,
                fixed="import torch\nfrom device_choice import get_device\nwith torch.autocast(get_device().type, "
                      "enabled=False):\n    pass\n"),
        # ... not a device other than the plain "cuda" (an index is the program's own choice of GPU).
        Invalid("import torch\nwith torch.autocast(f'cuda:{rank}', enabled=False):\n    pass\n", line=2,
                fixed=UNCHANGED),
    ]
