from __future__ import annotations

import libcst as cst

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity

KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
LAUNCHES = "LK403:launches"


class TritonKernel(KernelApiRule):
    code = "LK403"
    name = "triton-kernel"
    category = Category.KERNEL
    # A custom kernel to port where Triton has no backend (Pallas, NKI, Metal), as a CUDA kernel is.
    severity = Severity.BLOCKER
    message = ("`{api}`: Triton kernels run only where Triton has a backend ({nvidia_and_working_targets}); "
               "{raising_targets} have none.")
    suggestion = "Keep an eager fallback: {replacement}."
    min_torch = "2.6"
    supersedes = ("LK403",)
    what = ("Finds Triton import lines (`import triton`, `import triton.language as tl`, `from triton import ...`, "
            "also inside try/except, and `triton` re-exported by a shim such as `from vllm.triton_utils import triton`) "
            "and the decorators and calls that define kernels: `@triton.jit`, "
            "`@triton.autotune`, `@triton.heuristics`, `triton.jit(fn)`; kernel launches `kernel[grid](...)` of a "
            "kernel defined in the file (or imported under a name ending in \"kernel\"); and `triton.testing` "
            "benchmarking calls (`triton.testing.do_bench`). Calls such as `tl.load` or `triton.cdiv` are not "
            "reported one by one.")
    why = ("The PyPI triton wheel ships NVIDIA and AMD backends and Intel maintains an XPU backend, but there is no "
           "Triton for TPU, Trainium or MPS, and user kernels do not run on the CPU. Code that calls a Triton kernel "
           "without an eager fallback raises there.")
    instead = ("Register the kernel as a torch op with a pure-PyTorch fallback:\n\n"
               "```python\n@torch.library.triton_op(\"mylib::add\", mutates_args=())\n"
               "def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n    out = torch.empty_like(x)\n"
               "    torch.library.wrap_triton(add_kernel)[grid](x, y, out, x.numel(), BLOCK=1024)\n    return out\n\n"
               "@add.register_kernel(\"cpu\")\ndef _(x, y):\n    return x + y\n```\n\n"
               "`torch.library.triton_op` (2.6) also lets `torch.compile` see into the kernel. Dispatch on "
               "`x.device.type`, not on `torch.cuda.is_available()`.")

    VALID = [
        Valid('"""Written with @triton.jit."""\n# import triton\nprint("install triton for speed")\n'),
        Valid("from torch.utils._triton import has_triton\nok = has_triton()\n"),
        Valid("def f(triton):\n    return triton.jit(g)\n"),
        Valid("import torch\nop = torch.library.triton_op\n"),
        Valid("from vllm.triton_utils import HAS_TRITON\nif HAS_TRITON:\n    pass\n"),
        Valid("def f(triton):\n    @triton.jit\n    def k():\n        pass\n"),
        Valid("handlers = {'a': f}\nresult = handlers[key](event)\nout = table[kernel_id](x)\n"),
    ]
    INVALID = [
        Invalid("import triton\nimport triton.language as tl\n", line=2),
        Invalid("import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", line=3),
        Invalid("try:\n    import triton\nexcept ImportError:\n    triton = None\n", line=2),
        Invalid("from triton import jit, cdiv\n", line=1),
        Invalid("import triton as tr\n@tr.autotune(configs=[], key=['n'])\n@tr.jit\ndef k(n):\n    pass\n", line=2),
        Invalid("import triton\nkernel = triton.jit(body)\n", line=2),
        Invalid("from vllm.triton_utils import tl, triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", line=3),
        Invalid("from vllm.triton_utils import tl, triton\nn = triton.cdiv(a, b)\n", line=1),
        Invalid("import triton\n@triton.heuristics({'EVEN': lambda a: a['n'] % 2 == 0})\n@triton.jit\ndef k(n):\n    pass\n",
                line=3),
        Invalid("import triton\n\ndef add(x, y):\n    add_kernel[(x.numel() // 1024,)](x, y, BLOCK=1024)\n\n"
                "@triton.jit\ndef add_kernel(x, y, BLOCK: tl.constexpr):\n    pass\n", line=4),
        Invalid("import triton\nms = triton.testing.do_bench(lambda: f(x))\n", line=2),
    ]

    def begin(self, ctx: PythonContext) -> None:
        super().begin(ctx)
        ctx.state[LAUNCHES] = ([], set())  # (kernel name, launch call) candidates; kernels defined here

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: PythonContext) -> None:
        for decorator in node.decorators:
            target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            qualified = ctx.qualify(target) or ""
            if qualified in ("triton.jit", "triton.autotune", "triton.heuristics") or _is_reexported_decorator(qualified):
                ctx.state[LAUNCHES][1].add(node.name.value)

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        """`kernel[grid](...)`: a launch of a Triton kernel defined in this file, or imported under a
        name that says it is one (`from .kernels import fused_add_kernel`) into a file using triton."""
        func = node.func
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
            ctx.state[LAUNCHES][0].append((func.value.value, node))

    def finish(self, ctx: PythonContext) -> None:
        launches, kernels = ctx.state.get(LAUNCHES, ([], set()))
        uses_triton = "triton" in ctx.text
        for name, call in launches:
            imported = ctx.resolver.lookup(name) is not None and "kernel" in name.lower() and uses_triton
            if name in kernels or imported:
                ctx.report(self, call, api=f"{name}[grid](...)", replacement=self._replacement(ctx))

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        """`from vllm.triton_utils import triton`: triton re-exported by a shim is still triton."""
        module = ctx.module.code_for_node(node.module) if node.module is not None else ""
        if module == "triton" or module.startswith("triton.") or isinstance(node.names, cst.ImportStar):
            return  # the catalogue rows handle triton itself
        if any(isinstance(alias.name, cst.Name) and alias.name.value == "triton" for alias in node.names):
            ctx.report(self, node, api=f"{module}.triton", replacement=self._replacement(ctx))

    def visit_Decorator(self, node: cst.Decorator, ctx: PythonContext) -> None:
        super().visit_Decorator(node, ctx)
        target = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        if _is_reexported_decorator(ctx.qualify(target)):
            ctx.report(self, node.decorator, api=ctx.module.code_for_node(target),
                       replacement=self._replacement(ctx))

    def _replacement(self, ctx: PythonContext) -> str:
        entry = ctx.catalogue.lookup_api("triton.jit")
        return entry.replacement if entry is not None else ""


def _is_reexported_decorator(qualified: str | None) -> bool:
    """`from vllm.triton_utils import triton; @triton.jit`: triton re-exported by a shim module."""
    if qualified is None or qualified.startswith("triton."):
        return False  # the catalogue rows already handle triton itself
    parts = qualified.split(".")
    return len(parts) >= 3 and parts[-2] == "triton" and parts[-1] in KERNEL_DECORATORS
