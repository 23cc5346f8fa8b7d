from __future__ import annotations

import re

import libcst as cst

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import PythonContext, Reference
from auditor.fix.plan import FixPlan, NodeEdit, Pos, Reported, Rewriter
from auditor.model import Category, Severity
from auditor.python.syntax import positional, string_value

_DTYPES = {"FloatTensor": "float32", "HalfTensor": "float16", "DoubleTensor": "float64",
           "BFloat16Tensor": "bfloat16"}

# "torch.cuda.FloatTensor" spelled as a string: set_default_tensor_type and Tensor.type accept it.
_TYPE_STRING = re.compile(r"torch\.cuda\.(sparse\.)?[A-Za-z0-9]+Tensor")


_TYPE_TESTS = "LK219:type-tests"  # ids of the type arguments of isinstance calls in this file


class CudaTensorType(CudaApiRule):
    code = "LK219"
    name = "cuda-tensor-type"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is a legacy CUDA tensor type; it raises on every target without CUDA."
    suggestion = "{replacement}"
    min_torch = "2.1"
    tokens = ("cuda",)
    what = ("Finds the legacy typed CUDA tensors (`torch.cuda.FloatTensor`, `HalfTensor`, `LongTensor`, ..., "
            "`torch.cuda.sparse.*`), also in `torch.set_default_tensor_type(torch.cuda.FloatTensor)`, "
            "`.type(torch.cuda.HalfTensor)` and their string forms.")
    why = ("The typed-tensor API is legacy and CUDA-only: constructing or converting to these types raises "
           "without CUDA, and `set_default_tensor_type` is deprecated since torch 2.1.")
    instead = ("```python\nx = torch.empty(n, dtype=torch.float32, device=dev)\ny = x.to(dev, torch.float16)\n"
               "torch.set_default_device(dev); torch.set_default_dtype(torch.float32)\n```")

    VALID = [
        Valid("import torch\nx = torch.zeros(3, dtype=torch.float16, device=dev)\ny = x.type(torch.HalfTensor)\n"),
        Valid("def make(cuda):\n    return cuda.FloatTensor(3)\n"),
        Valid("import torch\nassert isinstance(scale, torch.cuda.FloatTensor), 'a 1-element CUDA tensor'\n"),
        Valid("import torch\nok = isinstance(x, (torch.cuda.HalfTensor, torch.HalfTensor))\n"),
        Valid('"""Returns a torch.cuda.FloatTensor."""\n# torch.set_default_tensor_type(torch.cuda.FloatTensor)\n'
              'if x.type() == "torch.cuda.FloatTensor":\n    print("torch.cuda.HalfTensor")\n'),
    ]
    INVALID = [
        Invalid("import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n", line=2),
        # trap: a type test elsewhere in the file does not hide a construction
        Invalid("import torch\nif isinstance(x, torch.cuda.FloatTensor):\n    y = torch.cuda.FloatTensor(2)\n", line=3),
        Invalid("import torch as th\ny = x.type(th.cuda.HalfTensor)\n", line=2),
        Invalid("from torch import cuda as tc\nbuf = tc.LongTensor(4).zero_()\n", line=2),
        Invalid("from torch.cuda import FloatTensor\nx = FloatTensor(2, 2)\n", line=2),
        Invalid("import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n", line=2),
        Invalid('x = x.type("torch.cuda.HalfTensor")\n', line=1),
        # Fix (F24, unsafe): the documented replacement, which differs in threads and for `torch.Tensor(...)`;
        # the device stays CUDA until chosen centrally.
        Invalid("import torch\n\nif fp16:\n    torch.set_default_tensor_type(torch.cuda.HalfTensor)\n", line=4,
                fix_class="unsafe",
                fixed='import torch\n\nif fp16:\n    torch.set_default_device("cuda")\n'
                      "    torch.set_default_dtype(torch.float16)\n"),
        Invalid("import torch\ntorch.set_default_tensor_type(torch.cuda.LongTensor)\n", line=2, fixed=UNCHANGED),
    ]

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "isinstance" and len(node.args) == 2:
            # `isinstance(x, torch.cuda.FloatTensor)`: a type test, False where there is no CUDA (the
            # class exists in every build; only constructing one raises)
            tested = node.args[1].value
            types = [e.value for e in tested.elements] if isinstance(tested, cst.Tuple) else [tested]
            ctx.state.setdefault(_TYPE_TESTS, set()).update(id(t) for t in types)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "type" and ctx.qualify(func) is None:
            pass  # x.type("torch.cuda.HalfTensor")
        elif ctx.qualify(func) != "torch.set_default_tensor_type":
            return
        arg = positional(node, 0)
        value = string_value(arg.value) if arg is not None else None
        if value is not None and _TYPE_STRING.fullmatch(value):
            ctx.report(self, node, api=value, replacement=self.suggestion_for_string(), min_torch="2.1")

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        if id(ref.node) not in ctx.state.get(_TYPE_TESTS, ()):
            super().on_reference(ref, ctx)

    @staticmethod
    def suggestion_for_string() -> str:
        return ("`t.to(dev, dtype)`; for the default: `torch.set_default_device(dev)` + "
                "`torch.set_default_dtype(...)`")

    FIXES = (FixSpec("F24", "unsafe", "`torch.set_default_tensor_type(torch.cuda.FloatTensor)` -> "
                     '`torch.set_default_device("cuda")` + `torch.set_default_dtype(torch.float32)` (the documented '
                     "replacement, not an equivalent one: the default device holds for the calling thread only and "
                     "the legacy constructor `torch.Tensor(...)` ignores it; the device is still CUDA: choose it "
                     "centrally next)", "2.1"),)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        ref = report.ref
        dtype = _DTYPES.get(ref.qualified.rsplit(".", 1)[-1]) if ref is not None else None
        if ref is None or ref.kind != "ref" or dtype is None or not ref.qualified.startswith("torch.cuda."):
            return None
        arg = rewriter.parent(ref.node)
        call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
        if (not isinstance(call, cst.Call) or len(call.args) != 1 or arg.keyword is not None
                or rewriter.ctx.qualify(call.func) != "torch.set_default_tensor_type"):
            return None
        statement = rewriter.lone_statement(call)
        device = rewriter.name_for("torch.set_default_device")
        default_dtype = rewriter.name_for("torch.set_default_dtype")
        torch_dtype = rewriter.name_for(f"torch.{dtype}")
        if statement is None or device is None or default_dtype is None or torch_dtype is None:
            return None
        first = f'{device[0]}("cuda")'
        second = f"{default_dtype[0]}({torch_dtype[0]})"
        newline = rewriter.newline
        imports = {e.content: e for e in [*device[1], *default_dtype[1], *torch_dtype[1]]}
        # the call becomes two statements, the second on its own line at the call's indentation
        both = NodeEdit(Pos(call, "start"), Pos(call, "end"), lambda indent: f"{first}{newline}{indent}{second}")
        return FixPlan("unsafe", f"Replace with `{first}` and `{second}` (the default device holds for this thread "
                                 "only, and `torch.Tensor(...)` ignores it)", [both, *imports.values()], "2.1",
                       fix_id="F24")
