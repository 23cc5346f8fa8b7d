from __future__ import annotations

import re

import libcst as cst

from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity
from auditor.python.syntax import string_value

# "cu" right before an interpolated version: f"+cu{v}", f"/whl/cu{v}", f"{sep}cu{v}".
_CU_BEFORE = re.compile(r"(^|[+/_.\-])cu$")
_URLISH = re.compile(r"whl|https?:|download\.pytorch\.org|index", re.IGNORECASE)


def is_build_script(ctx: PythonContext) -> bool:
    """setup.py and the modules that build extensions or wheels (rules/kernel.toml [build_scripts])."""
    if ctx.kind == "setup-py":
        return True
    pattern = ctx.catalogue.table("kernel").get("build_scripts", {}).get("paths")
    return bool(pattern) and re.search(pattern, ctx.path) is not None


class CudaBuildScript(Rule):
    fields = frozenset({"api"})
    code = "LK414"
    name = "cuda-build-script"
    category = Category.KERNEL
    severity = Severity.MAJOR
    subject = "`{api}`"
    message = ("`{api}`: this build code assumes a CUDA build of torch; with any other build (it raises on "
               "{raising_targets}) `torch.version.cuda` is None and the build fails or fetches a wheel for the "
               "wrong target.")
    suggestion = ("Branch on the build you have: `torch.version.cuda`, `torch.version.hip` and `torch.version.xpu` "
                  "(None when absent), and pick the wheel or index per target (`+cpu`, `+rocmX.Y`, `+xpu`, "
                  "`uv pip install --torch-backend=auto`).")
    tokens = ("version.cuda", "cu{", "+cu", "cu\"", "cu'")
    what = ("Finds build code that assumes CUDA: `torch.version.cuda` used as a value in setup.py or a build "
            "module (to compute flags or versions; as a condition it is LK215's), and wheel names, local versions "
            "and index URLs assembled from it (`f\"+cu{cuda_version}\"`, `f\".../whl/cu{v}\"`, `\"+cu\" + v`).")
    why = ("On every build of torch but the CUDA one `torch.version.cuda` is None: parsing it raises, and a wheel "
           "URL built from it names a CUDA wheel (or `cuNone`) that does not exist for ROCm, XPU, the CPU or macOS.")
    instead = ("```python\nif torch.version.cuda:\n    local = f\"+cu{torch.version.cuda.replace('.', '')}\"\n"
               "elif torch.version.hip:\n    local = f\"+rocm{torch.version.hip[:3]}\"\nelse:\n    local = \"+cpu\"\n```")

    VALID = [
        Valid("import torch\nif torch.version.cuda is not None:\n    pass\n", path="setup.py"),
        Valid("import torch\nprint(f'CUDA {torch.version.cuda}')\n", path="setup.py"),
        Valid("import torch\nv = torch.version.cuda\n", path="mypkg/model.py"),
        Valid("name = f'{prefix}cuda{i}'\nlabel = 'cu' + 'rve'\n", path="setup.py"),
    ]
    INVALID = [
        Invalid("import torch\nfrom packaging.version import parse\ncuda = parse(torch.version.cuda)\n", path="setup.py",
                line=3),
        Invalid("version = '1.0'\nversion += f'+cu{CUDA_VERSION}'\n", path="setup.py", line=2),
        Invalid("url = f'https://github.com/x/y/releases/download/v1/pkg-1.0+cu{cuda}torch{tv}-cp311.whl'\n",
                path="mypkg/install.py", line=1),
        Invalid("import torch\nmajor, minor = torch.version.cuda.split('.')\n", path="op_builder/builder.py", line=2),
        Invalid("local = '+cu' + cuda_version.replace('.', '')\n", path="setup.py", line=1),
    ]

    def visit_FormattedString(self, node: cst.FormattedString, ctx: PythonContext) -> None:
        parts = node.parts
        text = "".join(p.value for p in parts if isinstance(p, cst.FormattedStringText))
        for before, after in zip(parts, parts[1:], strict=False):
            if (isinstance(before, cst.FormattedStringText) and isinstance(after, cst.FormattedStringExpression)
                    and _CU_BEFORE.search(before.value)
                    and (_URLISH.search(text) or is_build_script(ctx))):
                ctx.report(self, node, api=" ".join(ctx.module.code_for_node(node).split())[:60])
                return

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        """`torch.version.cuda.split(".")`: a method of the version string (the walker resolves the
        whole dotted call, which names no catalogue API)."""
        func = node.func
        if isinstance(func, cst.Attribute) and ctx.qualify(func.value) == "torch.version.cuda" and is_build_script(ctx):
            ctx.report(self, node, api="torch.version.cuda")

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: PythonContext) -> None:
        if isinstance(node.operator, cst.Add) and is_build_script(ctx):
            left = string_value(node.left)
            if left is not None and _CU_BEFORE.search(left) and string_value(node.right) is None:
                ctx.report(self, node, api=" ".join(ctx.module.code_for_node(node).split())[:60])
