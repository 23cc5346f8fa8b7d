from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class NumbaCudaKernel(KernelApiRule):
    code = "LK405"
    name = "numba-cuda-kernel"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    message = "`{api}`: numba.cuda compiles kernels for NVIDIA GPUs only."
    suggestion = "Use {replacement}."
    supersedes = ("LK405",)
    what = ("Finds `from numba import cuda`, `import numba.cuda`, `@cuda.jit` and every other use of `numba.cuda.*` "
            "(`cuda.to_device`, `cuda.grid`, ...), resolved through imports and aliases. Plain `numba` (`@njit`) is "
            "portable and not reported.")
    why = ("The numba CUDA target generates PTX for NVIDIA GPUs. ROCm has only the experimental `numba-hip`; TPU, "
           "Trainium, MPS, XPU and CPU have no equivalent, so the kernels must be rewritten.")
    instead = ("Express the kernel with torch ops (and `torch.compile`), as a Triton kernel behind "
               "`torch.library.triton_op`, or keep a CPU path with `numba.njit`:\n\n"
               "```python\n@numba.njit(parallel=True)\ndef add(x, y, out):\n    for i in numba.prange(x.size):\n"
               "        out[i] = x[i] + y[i]\n```")

    VALID = [
        Valid("from numba import njit, prange\n@njit\ndef f(x):\n    return x\n"),
        Valid('"""Use numba.cuda for speed."""\n# from numba import cuda\nprint("@cuda.jit")\n'),
        Valid("import torch\ndef f(cuda):\n    return cuda.jit(g)\n"),
        Valid("from torch import cuda\ncuda.synchronize()\n"),
    ]
    INVALID = [
        Invalid("from numba import cuda\n", line=1),
        Invalid("from numba import cuda\n\n@cuda.jit\ndef k(x):\n    i = cuda.grid(1)\n", line=3),
        Invalid("import numba\nd = numba.cuda.to_device(a)\n", line=2),
        Invalid("import numba.cuda as nc\n@nc.jit\ndef k(x):\n    pass\n", line=2),
        Invalid("from numba.cuda import jit as cuda_jit\n", line=1),
    ]
