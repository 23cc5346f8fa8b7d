from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class PycudaUsage(KernelApiRule):
    code = "LK406"
    name = "pycuda-usage"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    message = "`{api}`: PyCUDA drives the NVIDIA CUDA driver API directly; there is no equivalent on any other target."
    suggestion = "Use {replacement}."
    supersedes = ("LK406",)
    what = ("Finds imports and uses of `pycuda` (`import pycuda.autoinit`, `pycuda.driver`, `pycuda.gpuarray`, "
            "`SourceModule`), resolved through aliases such as `import pycuda.driver as drv`.")
    why = ("PyCUDA creates CUDA contexts and compiles CUDA C with nvcc at run time. Nothing of it exists on ROCm, TPU, "
           "Trainium, MPS, XPU or CPU: the import itself fails without the NVIDIA driver.")
    instead = ("Let torch own the device and memory: tensors instead of `gpuarray`, `torch.Stream` / `torch.Event` "
               "instead of driver streams, and port `SourceModule` kernels to torch ops, Triton (through "
               "`torch.library.triton_op`) or a `torch.library.custom_op` with per-device kernels.")

    VALID = [
        Valid('"""Needs pycuda.autoinit."""\n# import pycuda.driver as drv\nprint("pip install pycuda")\n'),
        Valid("def f(drv):\n    return drv.mem_alloc(16)\n"),
    ]
    INVALID = [
        Invalid("import pycuda.autoinit\n", line=1),
        Invalid("import pycuda.driver as drv\nbuf = drv.mem_alloc(16)\n", line=2),
        Invalid("from pycuda.compiler import SourceModule\nmod = SourceModule(src)\n", line=2),
        Invalid("try:\n    import pycuda.gpuarray as gpuarray\nexcept ImportError:\n    gpuarray = None\n", line=2),
    ]
