"""Kernel rules (LK4xx) across files and rules: what the per-rule examples cannot express."""

from __future__ import annotations

import pytest

SETUP_PY = '''\
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, CUDA_HOME

ext = []
if CUDA_HOME is not None:
    ext.append(CUDAExtension("mylib._C", ["csrc/ops.cpp", "csrc/ops.cu"], extra_compile_args={"nvcc": ["-O3"]}))
setup(name="mylib", ext_modules=ext, cmdclass={"build_ext": BuildExtension})
'''

KERNEL_CU = '''\
// Copyright: __global__ in a comment does not count
#include <cuda_runtime.h>
#include <cute/tensor.hpp>

/* block comment
   __global__ void not_a_kernel() {}
*/
__global__ void add(float* x) {
    float v = __shfl_xor_sync(0xffffffff, x[0], 1);
    asm volatile("add.f32 %0, %0, %0;" : "+f"(v));
}

__global__ void scale(float* x) { x[0] *= 2; }
'''


def _lk4(result):
    return [(f.path, f.rule, f.line) for f in result.findings if f.rule.startswith("LK4")]


def test_setup_py_with_cuda_extension(scan_source):
    result = scan_source({"setup.py": SETUP_PY})
    assert not result.errors
    assert _lk4(result) == [
        ("setup.py", "LK402", 3),  # one finding for the import statement, not one per name
        ("setup.py", "LK402", 6),  # if CUDA_HOME is not None
        ("setup.py", "LK402", 7),  # CUDAExtension(...)
        ("setup.py", "LK402", 8),  # BuildExtension, because this file builds a CUDAExtension
    ]


def test_setup_py_with_cpp_extension_only_is_clean(scan_source):
    code = ("from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CppExtension\n"
            "setup(ext_modules=[CppExtension('m', ['m.cpp'])], cmdclass={'build_ext': BuildExtension})\n")
    assert _lk4(scan_source({"setup.py": code})) == []


def test_cuda_file_is_reported_once_with_details(scan_source):
    result = scan_source({"csrc/ops.cu": KERNEL_CU, "csrc/common.cuh": "#pragma once\n"})
    assert _lk4(result) == [("csrc/common.cuh", "LK401", 1), ("csrc/ops.cu", "LK401", 8)]
    message = next(f.message for f in result.findings if f.path == "csrc/ops.cu")
    assert "2 kernels" in message
    for feature in ("inline PTX", "CUTLASS/CuTe", "__shfl_*_sync"):
        assert feature in message
    finding = next(f for f in result.findings if f.path == "csrc/ops.cu")
    # inline PTX and CuTe, and nothing here builds for HIP: hipify cannot port it, so ROCm fails too
    assert finding.severity == "blocker" and finding.targets["rocm"] == "raises" and finding.targets["cpu"] == "raises"
    assert "no HIP build in this project" in finding.message
    header = next(f for f in result.findings if f.path == "csrc/common.cuh")
    assert header.targets["rocm"] == "degrades" and "(ROCm after a port)" in header.message


HIP_SETUP_PY = SETUP_PY.replace("ext = []\n", "ext = []\nflags = ['-DUSE_ROCM'] if torch.version.hip else []\n")


# exllamav2: `from torch import version as torch_version` ... `if torch_version.hip:`
ALIASED_HIP_SETUP_PY = SETUP_PY.replace(
    "ext = []\n", "from torch import version as torch_version\next = []\n"
                  "flags = ['-DHIPBLAS_USE_HIP_HALF'] if torch_version.hip else []\n")


@pytest.mark.parametrize("setup", [HIP_SETUP_PY, ALIASED_HIP_SETUP_PY], ids=["torch.version.hip", "alias"])
def test_a_kernel_of_a_project_building_for_hip_runs_on_rocm(scan_source, setup):
    result = scan_source({"setup.py": setup, "csrc/ops.cu": KERNEL_CU})
    finding = next(f for f in result.findings if f.rule == "LK401")
    assert finding.targets["rocm"] == "works" and finding.targets["cpu"] == "raises"
    assert "no HIP build" not in finding.message and "through the project's HIP build" in finding.message
    build = [f for f in result.findings if f.rule == "LK402"]  # the CUDAExtension the same build makes
    assert build and all(f.targets["rocm"] == "works" for f in build)
    main_path = [f for f in build if f.context is None]
    assert main_path and all(f.targets["mps"] == "raises" for f in main_path)
    assert all("{" not in f.message and "through the project's HIP build" in f.message for f in main_path)


@pytest.mark.parametrize("files", [
    # trap: the only HIP line refuses ROCm
    {"setup.py": SETUP_PY.replace("ext = []\n", "ext = []\nif torch.version.hip:\n    raise RuntimeError('ROCm is not supported')\n")},
    # trap: HIP named in a comment of another file, not in the build
    {"setup.py": SETUP_PY, "README.md": "We may add a HIP build (torch.version.hip) later.\n"},
])
def test_trap_no_hip_build_leaves_an_unportable_kernel_failing_on_rocm(files, scan_source):
    result = scan_source({**files, "csrc/ops.cu": KERNEL_CU})
    assert next(f for f in result.findings if f.rule == "LK401").targets["rocm"] == "raises"


def test_trap_warp_shuffles_alone_are_left_to_a_hipify_port(scan_source):
    cu = "__global__ void k(float* x) { x[0] = __shfl_xor_sync(0xffffffff, x[0], 1); }\n"
    finding = next(f for f in scan_source({"csrc/k.cu": cu}).findings if f.rule == "LK401")
    assert finding.targets["rocm"] == "degrades"


def test_binary_or_undecodable_cuda_file_is_an_error_not_a_crash(scan_source):
    result = scan_source({
        "csrc/blob.cu": b"\x00\x01\x02__global__\x00",
        "csrc/latin.cu": "// caf\xe9\n__global__ void k() {}\n".encode("latin-1"),
        "csrc/ok.cu": "__global__ void k() {}\n",
    })
    assert {(e.path, e.kind) for e in result.errors} == {("csrc/blob.cu", "binary"), ("csrc/latin.cu", "decode")}
    assert _lk4(result) == [("csrc/ok.cu", "LK401", 1)]


def test_jiterator_beats_the_generic_torch_cuda_row(scan_source):
    code = "import torch\nfn = torch.cuda.jiterator._create_jit_fn(src)\n"
    result = scan_source({"ops.py": code})
    assert [(f.rule, f.line) for f in result.findings if f.line == 2] == [("LK408", 2)]


def test_triton_file(scan_source):
    code = '''\
"""Kernels written with @triton.jit; import triton first."""
try:
    import triton
    import triton.language as tl
except ImportError:  # triton is optional
    triton = None


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


def launch(x):
    add_kernel[(triton.cdiv(x.numel(), 64),)](x, x.numel())
'''
    result = scan_source({"ops.py": code})
    assert [line for _, rule, line in _lk4(result) if rule == "LK403"] == [3, 4, 9, 10, 18]  # 18: the launch
    contexts = {f.line: f.context for f in result.findings if f.rule == "LK403"}
    assert contexts[3] == contexts[4] == "optional"  # the imports have a fallback (triton = None)
    assert contexts[9] is None and contexts[18] is None  # the decorators and launch do not check for it


def test_nested_uses_and_multi_name_imports_are_one_finding(scan_source):
    code = ("import cupy as cp\nfrom flash_attn import flash_attn_func, flash_attn_varlen_func\n"
            "x = cp.asarray(cp.zeros(3))\nout = flash_attn_func(q, k, flash_attn_varlen_func(q, k, v))\n")
    assert [(rule, line) for _, rule, line in _lk4(scan_source({"m.py": code}))] == [
        ("LK404", 1), ("LK409", 2), ("LK404", 3), ("LK409", 4)]


def test_a_library_scanning_itself_is_reported_like_any_code(scan_source):
    files = {
        "flash_attn/modules/mha.py": "from flash_attn import flash_attn_func\nout = flash_attn_func(q, k, v)\n",
        "flash_attn/flash_attn_interface.py": "import flash_attn_2_cuda as flash_attn_gpu\n",
        "app/model.py": "from flash_attn import flash_attn_func\n",
    }
    assert _lk4(scan_source(files)) == [
        ("app/model.py", "LK409", 1), ("flash_attn/flash_attn_interface.py", "LK409", 1),
        ("flash_attn/modules/mha.py", "LK409", 1), ("flash_attn/modules/mha.py", "LK409", 2)]


def test_mentions_are_not_findings(scan_source):
    code = '''\
"""Optional kernels: flash_attn, xformers, apex, cupy, numba.cuda, pycuda, tensorrt, bitsandbytes.

Compile with torch.utils.cpp_extension.CUDAExtension or @triton.jit; ctypes.CDLL("libcudart.so").
"""
# import triton; from numba import cuda; import cupy as cp
import logging

logging.info("install flash-attn, xformers and triton for speed; see kernels/add.cu")
print("torch.cuda.jiterator._create_jit_fn is CUDA-only")


def run(cuda, triton, cp):
    cuda.jit(f)
    triton.jit(f)
    return cp.asarray([1])
'''
    assert _lk4(scan_source({"m.py": code})) == []


def test_ctypes_star_import_and_cuda_python(scan_source):
    code = ('from ctypes import *\nnvml = CDLL("libnvidia-ml.so.1")\nlibc = CDLL("libc.so.6")\n'
            "from cuda.bindings import runtime as cudart\nerr, n = cudart.cudaGetDeviceCount()\n"
            "def f(s: cudart.cudaStream_t):\n    pass\n")
    assert [(rule, line) for _, rule, line in _lk4(scan_source({"m.py": code}))] == [
        ("LK407", 2), ("LK407", 4), ("LK407", 5)]


def test_cuda_only_op_names_the_registered_op_whatever_the_hash_seed(tmp_path):
    """A custom op is known by its registered name and by its function's name; which of the two a
    finding names must not follow set order, which changes with each interpreter's hash seed (the
    parallel workers' forkserver is another interpreter: serial and parallel reports differed)."""
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "ops.py").write_text(
        "import torch\n\n@torch.library.custom_op('mylib::scale', mutates_args=(), device_types='cuda')\n"
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    return x\n")
    subjects = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run([sys.executable, "-m", "auditor", "scan", str(tmp_path), "--no-cache", "--isolated",
                              "--select", "LK415", "--format", "json"], capture_output=True, text=True, env=env,
                             check=False).stdout
        subjects.update(f["message"].split("`")[1] for f in json.loads(out)["findings"])
    assert subjects == {"mylib::scale"}


KERNEL_LIBRARIES = [  # (import name, distribution name) of kernel libraries added from real serving and diffusion code
    ("sageattention", "sageattention"), ("spas_sage_attn", "spas-sage-attn"), ("st_attn", "st-attn"),
    ("nunchaku", "nunchaku"), ("fast_hadamard_transform", "fast-hadamard-transform"),
    ("grouped_gemm", "grouped_gemm"), ("eetq", "EETQ"), ("flute", "flute-kernel"), ("exllamav2", "exllamav2"),
    ("pplx_kernels", "pplx-kernels"), ("fla", "flash-linear-attention"), ("gemlite", "gemlite"),
]


def test_kernel_libraries_are_flagged_in_code_and_as_dependencies(scan_source):
    code = "".join(f"import {module}\n" for module, _ in KERNEL_LIBRARIES)
    requirements = "".join(f"{package}\n" for _, package in KERNEL_LIBRARIES)
    result = scan_source({"app.py": code, "requirements.txt": requirements})
    assert [(f.line, f.rule) for f in result.findings if f.path == "app.py"] == \
        [(n, "LK409") for n in range(1, len(KERNEL_LIBRARIES) + 1)]
    assert [(f.line, f.rule) for f in result.findings if f.path == "requirements.txt"] == \
        [(n, "LK504") for n in range(1, len(KERNEL_LIBRARIES) + 1)]


def test_kernel_library_names_that_are_not_the_library(scan_source):
    """Traps: the name in text, an attribute of something else, the project's own `fla` package."""
    result = scan_source({
        "app.py": '"""Uses sageattention when installed."""\n# import gemlite\nprint("pip install nunchaku")\n'
                  "cfg.fla = 1\nx = model.eetq\n",
        "pkg/__init__.py": "", "pkg/fla/__init__.py": "", "pkg/layers.py": "from .fla import chunk\n",
    })
    assert [(f.path, f.rule) for f in result.findings] == []


# A JIT build handing hipcc a flag only nvcc knows (stylegan3's ops: extra_cuda_cflags=['--use_fast_math']):
# ROCm's clang++ front end stops at it, so without a HIP build the ops do not exist there either.
JIT_OP = ("import os\nfrom torch.utils.cpp_extension import load\n\n_plugin = None\n\n\ndef _init():\n"
          "    global _plugin\n    _plugin = load(name='bias_act', sources=['bias_act.cpp', 'bias_act.cu'],\n"
          "                   extra_cuda_cflags=[{flags}])\n")


def test_a_build_with_an_nvcc_only_flag_raises_on_rocm_too(scan_source):
    result = scan_source({"ops/bias_act.py": JIT_OP.format(flags="'--use_fast_math', '-O3'")})
    build = [f for f in result.findings if f.rule == "LK402"]
    assert build and all(f.targets["rocm"] == "raises" for f in build)
    assert "hipcc stops at the nvcc-only flag `--use_fast_math`" in build[0].message


@pytest.mark.parametrize("files", [
    # trap: portable flags only, so hipify's port may build it
    {"ops/bias_act.py": JIT_OP.format(flags="'-O3', '-DNDEBUG'")},
    # trap: the project builds for HIP, which leaves nvcc's flags out there
    {"ops/bias_act.py": JIT_OP.format(flags="'--use_fast_math'"), "setup.py": HIP_SETUP_PY},
])
def test_trap_portable_flags_or_a_hip_build_leave_rocm_to_the_port(files, scan_source):
    build = [f for f in scan_source(files).findings if f.rule == "LK402" and f.path == "ops/bias_act.py"]
    assert build and all(f.targets["rocm"] in ("degrades", "works") for f in build)
