from __future__ import annotations

import re
from functools import lru_cache

import libcst as cst

from auditor.checks._kernel import KernelApiRule, literal_strings
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext, Reference
from auditor.model import Category, Severity
from auditor.python.syntax import keyword, positional

STAR = "LK407:ctypes-star"  # ctx.state key: the file did `from ctypes import *`
_STAR_LOADERS = {"CDLL": "ctypes.CDLL", "PyDLL": "ctypes.PyDLL", "WinDLL": "ctypes.WinDLL", "OleDLL": "ctypes.OleDLL",
                 "cdll.LoadLibrary": "ctypes.cdll.LoadLibrary", "windll.LoadLibrary": "ctypes.windll.LoadLibrary",
                 "util.find_library": "ctypes.util.find_library"}


@lru_cache(maxsize=8)
def _library_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """`libcudart.so.12`, `cudart64_12.dll`, `nvidia-ml`: a CUDA library name, with or without decorations."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"^(lib)?({alternatives})([-_.0-9].*|\.(so|dll|dylib).*)?$", re.IGNORECASE)


class CudaRuntimeBinding(KernelApiRule):
    fields = KernelApiRule.fields | {"what"}
    code = "LK407"
    name = "cuda-runtime-binding"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    subject = "{what}"
    message = "{what}: this binds the NVIDIA CUDA libraries directly and fails wherever they are not installed."
    suggestion = "Use {replacement}."
    supersedes = ("LK407",)
    tokens = ("ctypes",)
    what = ("Finds ctypes loaders (`ctypes.CDLL`, `ctypes.cdll.LoadLibrary`, `ctypes.WinDLL`, `ctypes.PyDLL`, "
            "`ctypes.util.find_library`) given a CUDA library name (libcudart, libcuda, libnvrtc, libcublas(Lt), "
            "libcudnn, libnvidia-ml, libnccl, libcufft, libcurand, libcusparse, libcusolver, libnvToolsExt; the list "
            "is in rules/kernel.toml), and cuda-python (`from cuda import cudart`, `cuda.bindings.*`).")
    why = ("These calls talk to the CUDA runtime, driver or NVML without going through torch. On ROCm the HIP "
           "libraries have other names and need a manual mapping; on TPU, Trainium, MPS, XPU and CPU the library is "
           "simply missing and the load raises.")
    instead = ("Use the torch API for what the binding is used for: `torch.accelerator` (device count, index, "
               "synchronize, memory), `torch.Stream` / `torch.Event`, `torch.cuda.memory` only inside a CUDA-only "
               "branch. Keep any remaining direct binding behind a check of `torch.accelerator.current_accelerator()`.")

    VALID = [
        Valid('import ctypes\nlibc = ctypes.CDLL("libc.so.6")\nhip = ctypes.CDLL("libamdhip64.so")\n'),
        Valid('import ctypes\nlib = ctypes.CDLL(None)\nprint("loading libcudart.so")\n'),
        Valid('"""Loads libcudart via ctypes.CDLL."""\n# ctypes.CDLL("libcudart.so")\n'),
        Valid("def f(cuda):\n    return cuda.bindings.runtime.cudaGetDeviceCount()\n"),
        Valid('import ctypes\nlib = ctypes.CDLL("libcudaq_extra.so")\n'),
    ]
    INVALID = [
        Invalid('import ctypes\ncudart = ctypes.CDLL("libcudart.so")\n', line=2),
        Invalid('from ctypes import CDLL\nnvml = CDLL("libnvidia-ml.so.1")\n', line=2),
        Invalid('import ctypes\nlib = ctypes.cdll.LoadLibrary("libcublasLt.so.12")\n', line=2),
        Invalid('import ctypes.util\npath = ctypes.util.find_library("cudart")\n', line=2),
        Invalid('import ctypes as ct\nlib = ct.WinDLL("cudart64_12.dll")\n', line=2),
        Invalid('import os, ctypes\nlib = ctypes.CDLL(os.path.join(root, "lib", "libnccl.so.2"))\n', line=2),
        Invalid('from ctypes import *\nlib = CDLL("libcuda.so.1")\n', line=2),
        Invalid("from cuda import cudart\nerr, n = cudart.cudaGetDeviceCount()\n", line=2),
        Invalid("from cuda.bindings import runtime\n", line=1),
        Invalid("import cuda.bindings.driver as cuda\nstream = cuda.CUstream(0)\n", line=2),
    ]

    def begin(self, ctx: PythonContext) -> None:
        super().begin(ctx)
        ctx.state[STAR] = False

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if isinstance(node.names, cst.ImportStar) and isinstance(node.module, cst.Name) and node.module.value == "ctypes":
            ctx.state[STAR] = True

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        loader = self._loader(node.func, ctx)
        if loader is None:
            return
        arg = positional(node, 0) or keyword(node, "name")
        if arg is None:
            return
        table = ctx.catalogue.table("kernel").get("cuda_runtime_binding", {})
        pattern = _library_pattern(tuple(table.get("libraries", ())))
        for text in literal_strings(arg.value):
            base = text.replace("\\", "/").rsplit("/", 1)[-1]
            if pattern.match(base):
                ctx.report(self, node, what=f"`{loader.removeprefix('ctypes.')}(\"{base}\")`",
                           replacement="torch.accelerator / torch.Stream / torch.Event APIs instead of loading "
                                       f"{base} through ctypes")
                return

    def _loader(self, func: cst.BaseExpression, ctx: PythonContext) -> str | None:
        loaders = ctx.catalogue.table("kernel").get("cuda_runtime_binding", {}).get("loaders", ())
        qualified = ctx.qualify(func)
        if qualified is not None:
            return qualified if qualified in loaders else None
        if not ctx.state.get(STAR):
            return None
        code = ctx.module.code_for_node(func) if isinstance(func, (cst.Name, cst.Attribute)) else ""
        return _STAR_LOADERS.get(code)

    def emit(self, ref: Reference, ctx: PythonContext, **fields: object) -> None:
        super().emit(ref, ctx, what=f"`{ref.qualified}` (cuda-python)", **fields)

