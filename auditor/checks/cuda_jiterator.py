from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaJiterator(KernelApiRule):
    code = "LK408"
    name = "cuda-jiterator"
    category = Category.KERNEL
    severity = Severity.MAJOR
    message = "`{api}` compiles CUDA C++ at run time with NVRTC (hipRTC on ROCm) and raises on {raising_targets}."
    suggestion = "Write {replacement}."
    supersedes = ("LK408",)
    what = ("Finds `torch.cuda.jiterator.*` (`_create_jit_fn`, `_create_multi_output_jit_fn`), imports included, "
            "resolved through aliases such as `from torch.cuda import jiterator`.")
    why = ("The jiterator turns a CUDA C++ string into a kernel with NVRTC. ROCm builds support it through hipRTC; "
           "on TPU, Trainium, MPS, XPU and CPU the call raises.")
    instead = ("```python\n@torch.compile\ndef gelu_tanh(x):\n"
               "    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))\n```\n\n"
               "Plain torch ops run everywhere; `torch.compile` fuses them into one kernel where a backend exists.")

    VALID = [
        Valid("import torch\ny = torch.compile(fn)(x)\n"),
        Valid('"""See torch.cuda.jiterator._create_jit_fn."""\n# from torch.cuda import jiterator\n'),
        Valid("def f(jiterator):\n    return jiterator._create_jit_fn(code)\n"),
    ]
    INVALID = [
        Invalid("import torch\nfn = torch.cuda.jiterator._create_jit_fn(code)\n", line=2),
        Invalid("import torch as th\nfn = th.cuda.jiterator._create_multi_output_jit_fn(code, num_outputs=2)\n", line=2),
        Invalid("from torch.cuda import jiterator\nfn = jiterator._create_jit_fn(code)\n", line=2),
        Invalid("from torch.cuda.jiterator import _create_jit_fn\n", line=1),
    ]
