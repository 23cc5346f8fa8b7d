from __future__ import annotations

import bisect
import re

from auditor import targets
from auditor.catalogue import labelled_patterns
from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import FileContext
from auditor.model import Category, Severity
from auditor.read.text import line_starts
from auditor.targets import effect_fields

_START = re.compile(r"[\"'/]")  # where a literal or a comment may start
_KERNEL = re.compile(r"__global__")
_CODE_LINE = re.compile(r"\S")


def strip_comments(text: str) -> str:
    """C/C++/CUDA text without comments; a comment keeps only its line ends, so lines stay put.
    String and character literals are kept (inline PTX lives in them).

    One pass from left to right, each character looked at a bounded number of times: a `/*`
    without its `*/` runs to the end of the file and an unterminated quote to the end of its line,
    as a compiler reads them (a regex retried at every one of 40,000 unterminated `/*` took 32 s)."""
    out: list[str] = []
    at, size = 0, len(text)
    find = text.find
    while at < size:
        match = _START.search(text, at)
        if match is None:
            break
        start = match.start()
        char = text[start]
        if char == "/":
            follow = text[start + 1:start + 2]
            if follow not in ("/", "*"):
                out.append(text[at:start + 1])
                at = start + 1
                continue
            if follow == "/":
                end = find("\n", start)
                end = size if end < 0 else end
            else:
                end = find("*/", start + 2)
                end = size if end < 0 else end + 2
            out.append(text[at:start])
            comment = text[start:end]
            breaks = comment.count("\n") + comment.count("\r") - comment.count("\r\n")
            out.append("\n" * breaks if breaks else " ")
            at = end
            continue
        end = start + 1  # a quote: to its unescaped twin, or the end of the line
        while end < size and text[end] != char and text[end] not in "\r\n":
            end += 2 if text[end] == "\\" else 1
        end = min(end + 1, size) if end < size and text[end] == char else end
        out.append(text[at:end])
        at = end
    out.append(text[at:])
    return "".join(out)


class CudaSourceFile(Rule):
    fields = frozenset({"detail", "port"})
    code = "LK401"
    name = "cuda-source-file"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    subject = "This CUDA source file{detail}"
    message = ("CUDA source file{detail}: it compiles only with nvcc, so this code exists only on NVIDIA{port} and "
               "raises on {raising_targets}.")
    suggestion = ("Give the op a pure-PyTorch reference implementation registered with torch.library.custom_op and keep "
                  "this kernel as its \"cuda\" kernel; port it per target ({kernel_ports}) or use Triton through "
                  "torch.library.triton_op.")
    min_torch = "2.4"
    file_kinds = frozenset({"cuda"})
    what = ("Finds every `.cu` / `.cuh` file, once per file, at its first `__global__` kernel (else its first line of "
            "code). The message counts the kernels and names NVIDIA-only features it can spot cheaply: inline PTX "
            "(`asm volatile`), CUTLASS/CuTe includes, tensor-core MMA (wmma, mma.sync, wgmma), `__shfl_*_sync` "
            "warp shuffles, cp.async/TMA, cuBLAS/cuDNN and CUB/Thrust. A file with inline PTX, CUTLASS/CuTe, MMA or "
            "cp.async/TMA raises on ROCm too unless the project's setup.py or CMakeLists.txt builds for HIP.")
    why = ("CUDA C++ only builds with nvcc. On ROCm, torch's BuildExtension hipifies the sources, but hipify has no "
           "CUTLASS/CuTe mappings, almost no cuDNN ones, and cannot port inline PTX, warp-size assumptions (AMD "
           "wavefronts are 64 wide) or Hopper/Blackwell instructions. TPU, Trainium, MPS, XPU and CPU need a rewrite "
           "or a fallback.")
    instead = ("Keep one op with a portable reference and per-device fast paths:\n\n"
               "```python\n@torch.library.custom_op(\"mylib::fused_add\", mutates_args=())\n"
               "def fused_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n    return x + y  # reference, every target\n\n"
               "@fused_add.register_kernel(\"cuda\")\ndef _(x, y):\n    return _C.fused_add(x, y)  # this .cu kernel\n```\n\n"
               "Per target: hipify (ROCm), `SyclExtension` / `sycl_sources=` (XPU, 2.7), `torch.mps.compile_shader` "
               "(MPS, 2.7), Triton via `torch.library.triton_op` (CUDA, ROCm, XPU, 2.6).")

    VALID = [
        Valid("// __global__ void k() {}\n", path="kernels/add.cpp"),
        Valid("__global__ void k() {}\n", path="kernels/add.hip"),
        Valid('print("compile add.cu with nvcc")\n# __global__ void k()\n'),
    ]
    INVALID = [
        Invalid("#include <cuda_runtime.h>\n\n__global__ void add(float* x) { x[0] += 1; }\n", path="kernels/add.cu", line=3),
        Invalid("#pragma once\ntemplate <typename T> __device__ T warp_sum(T v);\n", path="kernels/reduce.cuh", line=1),
        Invalid("/* header */\n#include <cute/tensor.hpp>\n__global__ void k() { asm volatile(\"mma.sync.aligned\"); }\n",
                path="csrc/gemm.cu", line=3),
    ]

    def check_file(self, ctx: FileContext) -> None:
        code = strip_comments(ctx.text)
        kernels = _KERNEL.findall(code)
        first = _KERNEL.search(code) or _CODE_LINE.search(code)
        line = bisect.bisect_right(line_starts(code), first.start()) if first else 1
        table = ctx.catalogue.table("kernel").get("cuda_source_features", {})
        notable = [label for label, pattern in labelled_patterns(tuple(table.items())) if pattern.search(code)]
        parts = []
        if kernels:
            parts.append(f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}")
        if notable:
            parts.append("uses " + ", ".join(notable))
        detail = f" ({'; '.join(parts)})" if parts else ""
        hip = ctx.catalogue.table("kernel").get("hip_build", {})
        unported = set(notable) & set(hip.get("unported_features", ()))
        if unported and not (ctx.facts is not None and ctx.facts.hip_build):
            # hipify cannot port these and nothing in the project builds for HIP: ROCm fails as the others do
            effects = {target: "raises" if target == hip.get("target") else effect
                       for target, effect in self.effects().items()}
            ctx.report_at(self, line, 1, detail=detail, port=", with no HIP build in this project to port it",
                          __effects=effects)
            return
        if ctx.facts is not None and ctx.facts.hip_build and hip.get("target"):
            # the project's own build hipifies it (setup.py / CMakeLists.txt build for ROCm): it runs there
            effects = {**self.effects(), hip["target"]: "works"}
            ctx.report_at(self, line, 1, detail=detail, __effects=effects,
                          port=f" and on {targets.get(hip['target']).display} (through the project's HIP build)")
            return
        ctx.report_at(self, line, 1, detail=detail, port=f" ({effect_fields(self.effects())['degrading_targets']} after a port)")
