"""A build that compiles a CPU extension of the same ops where CUDA is missing (torch_scatter's
`Extension = CppExtension if suffix == "cpu" else CUDAExtension`, torchvision's `extension =
CppExtension` then `if WITH_CUDA: extension = CUDAExtension`): its CUDA half and the CUDA sources only
it compiles are an optional fast path. The CPU runs the CPU ops; another accelerator runs them on CPU
tensors only (degraded). Traps: a CPU extension of other ops beside an unconditional CUDA one, and a
CUDA build under a condition with no CPU build."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_report import judged, report

KERNEL = "__global__ void add(float *x) { x[threadIdx.x] += 1; }\n"
HEAD = ("import torch\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, CUDA_HOME\n\n")
TERNARY = HEAD + ("WITH_CUDA = torch.cuda.is_available() and CUDA_HOME is not None\n"
                  "suffices = ['cpu', 'cuda'] if WITH_CUDA else ['cpu']\n\n"
                  "def get_extensions():\n    out = []\n    for suffix in suffices:\n"
                  "        sources = ['csrc/ops.cpp'] + (['csrc/cuda/ops_cuda.cu'] if suffix == 'cuda' else [])\n"
                  "        Extension = CppExtension if suffix == 'cpu' else CUDAExtension\n"
                  "        out.append(Extension(f'lib._ops_{suffix}', sources))\n    return out\n\n"
                  "setup(name='lib', packages=['lib'], ext_modules=get_extensions(),\n"
                  "      cmdclass={'build_ext': BuildExtension})\n")
REBOUND = HEAD + ("def get_extensions():\n    extension = CppExtension\n    sources = ['csrc/ops.cpp']\n"
                  "    if torch.cuda.is_available() and CUDA_HOME is not None:\n"
                  "        extension = CUDAExtension\n        sources += ['csrc/cuda/ops_cuda.cu']\n"
                  "    return [extension('lib._C', sources)]\n\n"
                  "setup(name='lib', packages=['lib'], ext_modules=get_extensions(),\n"
                  "      cmdclass={'build_ext': BuildExtension})\n")
IF_ELSE = HEAD + ("if torch.cuda.is_available():\n    ext = CUDAExtension('lib._C', ['csrc/ops.cpp', 'csrc/cuda/ops_cuda.cu'])\n"
                  "else:\n    ext = CppExtension('lib._C', ['csrc/ops.cpp'])\n\n"
                  "setup(name='lib', packages=['lib'], ext_modules=[ext], cmdclass={'build_ext': BuildExtension})\n")
# traps
OTHER_OPS = HEAD + ("ext = [CppExtension('lib._cpu_only', ['csrc/ops.cpp']),\n"
                    "       CUDAExtension('lib._fused', ['csrc/cuda/ops_cuda.cu'])]\n"
                    "setup(name='lib', packages=['lib'], ext_modules=ext, cmdclass={'build_ext': BuildExtension})\n")
NO_CPU = HEAD + ("ext = []\nif torch.cuda.is_available():\n"
                 "    ext = [CUDAExtension('lib._C', ['csrc/ops.cpp', 'csrc/cuda/ops_cuda.cu'])]\n"
                 "setup(name='lib', packages=['lib'], ext_modules=ext, cmdclass={'build_ext': BuildExtension})\n")


def audit_build(root: Path, setup: str, capsys) -> dict:
    """A package `lib` whose setup.py is `setup`, with a C++ source and a CUDA kernel in csrc/."""
    return report(root, {"setup.py": setup, "lib/__init__.py": "", "csrc/ops.cpp": "int f() { return 0; }\n",
                         "csrc/cuda/ops_cuda.cu": KERNEL}, capsys)


@pytest.mark.parametrize("setup", [TERNARY, REBOUND, IF_ELSE], ids=["ternary", "rebound", "if-else"])
def test_a_cuda_build_beside_a_cpu_build_of_the_same_ops_is_a_fast_path(tmp_path, capsys, setup):
    document = audit_build(tmp_path, setup, capsys)
    builds = [f for f in document["findings"] if f["rule"] == "LK402"]
    assert builds and all("optional" in f["context"].split("+") and "build" in f["guard"].split("+")
                          for f in builds), [(f["line"], f["context"], f["guard"]) for f in builds]
    assert "compiles a CPU extension of the same ops where CUDA is missing" in builds[0]["message"]
    kernel = next(f for f in document["findings"] if f["rule"] == "LK401")
    assert "optional" in kernel["context"]  # compiled only by that build
    verdicts = judged(document)
    assert verdicts["cpu"] == "runs"  # the CPU extension is the CPU's own path
    assert verdicts["tpu"] == verdicts["mps"] == "runs-degraded"  # its ops run on CPU tensors only there


@pytest.mark.parametrize("setup", [OTHER_OPS, NO_CPU], ids=["other-ops", "no-cpu-build"])
def test_trap_no_cpu_build_of_the_same_ops_keeps_the_cuda_build_required(tmp_path, capsys, setup):
    document = audit_build(tmp_path, setup, capsys)
    builds = [f for f in document["findings"] if f["rule"] == "LK402"]
    assert builds and not any("CPU extension" in f["message"] for f in builds)
    assert judged(document)["cpu"] == "fails"


def test_the_message_points_at_the_choice_not_at_the_same_text_before_it(tmp_path, capsys):
    # the condition's text also stands in a comment above it: the line is the `if`'s own
    setup = IF_ELSE.replace(HEAD, HEAD + "# if torch.cuda.is_available(): the CUDA build, else the CPU one\n")
    document = audit_build(tmp_path, setup, capsys)
    line = setup.splitlines().index("if torch.cuda.is_available():") + 1
    builds = [f for f in document["findings"] if f["rule"] == "LK402"]
    assert builds and all(f"`torch.cuda.is_available()`, line {line})" in f["message"] for f in builds)
