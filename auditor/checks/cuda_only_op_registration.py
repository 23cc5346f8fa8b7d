from __future__ import annotations

import libcst as cst

from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity
from auditor.python.syntax import keyword, positional, string_value

STATE = "LK415"
# Dispatch keys and device types that serve CUDA (and ROCm); anything else registered for the same
# op (CPU, XPU, MPS, PrivateUse1, CompositeImplicitAutograd, "default", ...) is a fallback.
_CUDA_KEYS = frozenset({"cuda", "autogradcuda", "sparsecuda", "quantizedcuda", "nestedtensorcuda"})
# Keys that give no kernel of their own (shape functions, autograd glue).
_NEUTRAL_KEYS = frozenset({"meta", "autograd", "functionalize", "fake", "python", "backendselect"})


def _keys(value: cst.BaseExpression | None) -> list[str]:
    """Dispatch keys / device types from "CUDA", ("cuda", "cpu"), ["cuda"]."""
    if value is None:
        return []
    text = string_value(value)
    if text is not None:
        return [text.lower()]
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return [k for e in value.elements for k in _keys(e.value)]
    return ["?"]  # a variable: could be anything


class CudaOnlyOpRegistration(Rule):
    fields = frozenset({"api"})
    code = "LK415"
    name = "cuda-only-op-registration"
    category = Category.KERNEL
    severity = Severity.MAJOR
    subject = "The registration of `{api}`"
    message = ("`{api}` is registered for CUDA only: on every other device the op has no kernel and calling it "
               "raises (\"could not run ... with arguments from the 'CPU' backend\").")
    suggestion = ("Give the op a default: a pure-PyTorch body in `torch.library.custom_op` (or "
                  "`register_kernel(\"cpu\")` / a `CompositeImplicitAutograd` impl), keeping the CUDA kernel as a fast "
                  "path; add `\"xpu\"` / `\"mps\"` kernels where they exist.")
    min_torch = "2.4"
    tokens = ("cuda",)
    what = ("Finds ops registered for CUDA and nothing else in the same file: `torch.library.impl(..., \"CUDA\")` "
            "(call or decorator), `Library.impl(\"op\", fn, \"CUDA\")`, `torch.library.register_kernel(\"ns::op\", "
            "\"cuda\")`, `@op.register_kernel(\"cuda\")` and `torch.library.custom_op(..., device_types=\"cuda\")`. "
            "An op that also gets a CPU, XPU, MPS, PrivateUse1, CompositeImplicitAutograd or default "
            "implementation (a `custom_op` body) is not reported.")
    why = ("The dispatcher only finds a kernel for the keys an op was registered for. ROCm builds use the CUDA key, "
           "but on TPU, Trainium, MPS, XPU and CPU an op with only a CUDA kernel raises as soon as it is called.")
    instead = ("```python\n@torch.library.custom_op(\"mylib::rms_norm\", mutates_args=())\n"
               "def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:\n"
               "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w  # every device\n\n"
               "@rms_norm.register_kernel(\"cuda\")\ndef _(x, w):\n    return _C.rms_norm(x, w)  # the fast path\n```")

    VALID = [
        Valid("import torch\n\n@torch.library.custom_op('mylib::f', mutates_args=())\ndef f(x: torch.Tensor) -> torch.Tensor:\n"
              "    return x.clone()\n\n@f.register_kernel('cuda')\ndef _(x):\n    return x.clone()\n"),
        Valid("import torch\nlib = torch.library.Library('mylib', 'FRAGMENT')\n"
              "lib.impl('f', f_cuda, 'CUDA')\nlib.impl('f', f_cpu, 'CPU')\n"),
        Valid("import torch\ntorch.library.register_kernel('mylib::f', 'cpu', f_cpu)\n"),
        Valid('"""Registered with torch.library.impl(lib, "f", "CUDA")."""\nprint("register_kernel(\'cuda\')")\n'),
        Valid("import torch\n\n@torch.library.impl('mylib::g', 'cuda')\ndef g_cuda(x):\n    return x\n\n"
              "@torch.library.impl('mylib::g', 'CompositeImplicitAutograd')\ndef g_ref(x):\n    return x\n"),
    ]
    INVALID = [
        Invalid("import torch\nlib = torch.library.Library('mylib', 'FRAGMENT')\nlib.impl('f', f_cuda, 'CUDA')\n", line=3),
        Invalid("import torch\n\n@torch.library.impl('mylib::g', 'cuda')\ndef g_cuda(x):\n    return x\n", line=3),
        Invalid("import torch\ntorch.library.register_kernel('mylib::h', 'cuda', h_cuda)\n", line=2),
        Invalid("import torch\n\n@torch.library.custom_op('mylib::k', mutates_args=(), device_types='cuda')\n"
                "def k(x: torch.Tensor) -> torch.Tensor:\n    return x\n", line=3),
        Invalid("import torch\n\n@torch.library.impl('mylib::m', 'Meta')\ndef m_meta(x):\n    return x\n\n"
                "@torch.library.impl('mylib::m', 'CUDA')\ndef m_cuda(x):\n    return x\n", line=7),
    ]

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[STATE] = {}  # op -> [(keys, node)]

    def _add(self, ctx: PythonContext, op: str | None, keys: list[str], node: cst.CSTNode) -> None:
        if op is not None and keys:
            ctx.state[STATE].setdefault(op, []).append((keys, node))

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: PythonContext) -> None:
        """`@torch.library.custom_op(...)` gives the op a default (its body) unless device_types narrows
        it; the op is known by the function's name for `@name.register_kernel(...)`."""
        for decorator in node.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call) and ctx.qualify(call.func) in ("torch.library.custom_op",
                                                                         "torch.library.triton_op"):
                name = string_value(call.args[0].value) if call.args else None
                types = keyword(call, "device_types")
                keys = _keys(types.value) if types is not None and string_value(types.value) != "" else ["default"]
                # the registered name first: both name one op, and a finding keeps the first report's subject
                for op in dict.fromkeys(n for n in (name, node.name.value) if n is not None):
                    self._add(ctx, op, keys, call)

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        qualified = ctx.qualify(func)
        if qualified == "torch.library.impl":
            # impl("ns::op", "CUDA", fn) or impl(lib, "op", "CUDA")
            first = string_value(node.args[0].value) if node.args else None
            if first is not None and "::" in first:
                self._add(ctx, first, _keys((keyword(node, "types") or positional(node, 1) or _NONE).value), node)
            else:
                op = string_value(positional(node, 1).value) if positional(node, 1) is not None else None
                self._add(ctx, op, _keys((keyword(node, "types") or positional(node, 2) or _NONE).value), node)
        elif qualified == "torch.library.register_kernel":
            op = string_value(node.args[0].value) if node.args else None
            self._add(ctx, op, _keys((keyword(node, "device_types") or positional(node, 1) or _NONE).value), node)
        elif qualified is None and isinstance(func, cst.Attribute):
            if func.attr.value == "register_kernel" and isinstance(func.value, cst.Name):
                target = keyword(node, "device_types") or positional(node, 0)
                self._add(ctx, func.value.value, _keys(target.value if target else None), node)
            elif func.attr.value == "impl" and node.args and len(node.args) >= 3:  # lib.impl("op", fn, "CUDA")
                op = string_value(node.args[0].value)
                key = keyword(node, "dispatch_key") or positional(node, 2)
                self._add(ctx, op, _keys(key.value if key else None), node)

    def finish(self, ctx: PythonContext) -> None:
        for op, registrations in ctx.state[STATE].items():
            keys = {k for found, _ in registrations for k in found} - _NEUTRAL_KEYS
            if keys and keys <= _CUDA_KEYS:
                for found, node in registrations:
                    if set(found) & _CUDA_KEYS:
                        ctx.report(self, node, api=op)


class _Missing:
    value = None


_NONE = _Missing()
