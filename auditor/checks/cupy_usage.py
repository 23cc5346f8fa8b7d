from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CupyUsage(KernelApiRule):
    code = "LK404"
    name = "cupy-usage"
    category = Category.KERNEL
    severity = Severity.MAJOR
    message = "`{api}`: CuPy arrays and kernels need the CUDA runtime (ROCm only through a separate cupy-rocm build)."
    suggestion = "Use {replacement}."
    supersedes = ("LK404",)
    what = ("Finds imports and uses of `cupy` and `cupyx` (arrays, `cupy.cuda.*` streams and runtime, `RawKernel`, "
            "`ElementwiseKernel`, `cupyx.jit`), resolved through aliases such as `import cupy as cp`.")
    why = ("CuPy is a CUDA array library: TPU, Trainium, MPS, XPU and CPU have no backend for it, and ROCm needs the "
           "separate, older `cupy-rocm` wheels where RawKernel sources go through hipRTC with the usual CUDA-isms. "
           "Array code converts to torch mechanically; raw kernels need a port.")
    instead = ("```python\nx = torch.as_tensor(data, device=DEVICE)  # instead of cp.asarray(data)\n"
               "y = torch.fft.rfft(x)                      # instead of cp.fft.rfft(x)\n```\n\n"
               "Port `RawKernel` / `ElementwiseKernel` code to torch ops (fused by `torch.compile`), Triton through "
               "`torch.library.triton_op`, or a `torch.library.custom_op` with per-device kernels.")

    VALID = [
        Valid('"""Uses cupy when available."""\n# import cupy as cp\nprint("pip install cupy-cuda12x")\n'),
        Valid("import numpy as np\ndef f(cp):\n    return cp.asarray([1])\n"),
        Valid("import numpy as cp\nx = cp.zeros(3)\n"),
    ]
    INVALID = [
        Invalid("import cupy as cp\nx = cp.asarray(data)\n", line=2),
        Invalid("import cupy\n", line=1),
        Invalid("try:\n    import cupy as cp\nexcept ImportError:\n    cp = None\n", line=2),
        Invalid("from cupyx.scipy import ndimage\n", line=1),
        Invalid("import cupy as cp\nk = cp.RawKernel(src, 'add')\n", line=2),
        Invalid("from cupy import cuda\nwith cuda.Device(0):\n    pass\n", line=2),
    ]
