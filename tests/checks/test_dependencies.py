"""Dependency readers (requirements, pyproject.toml, setup.cfg, setup.py) and the LK5xx rules,
including the bad-input cases: the run goes on and the other findings are kept."""

from __future__ import annotations

import pytest

from auditor.catalogue import load_catalogue
from auditor.context import FileContext
from auditor.readers import IndexUrl, Requirement, normalize
from auditor.readers.dependencies import read_dependencies


def _read(text: str, kind: str, path: str = "x") -> tuple[list[Requirement], list[IndexUrl], FileContext]:
    ctx = FileContext(path, text, load_catalogue(), kind)
    deps = read_dependencies(ctx)
    return deps.requirements, deps.indexes, ctx


def _found(result, rule: str | None = None) -> list[tuple[str, int, str]]:
    return sorted((f.path, f.line, f.rule) for f in result.findings if rule is None or f.rule == rule)


def test_normalize():
    assert normalize("Flash_Attn") == normalize("flash.attn") == normalize("flash--attn") == "flash-attn"


# -- requirements files -------------------------------------------------------------------------

REQUIREMENTS = """\
# flash-attn in a comment is not a dependency
torch==2.1.0+cu121  # trailing comment
torchvision @ https://download.pytorch.org/whl/cu121/torchvision-0.16.0%2Bcu121-cp311-cp311-linux_x86_64.whl
Flash_Attn[extra]>=2.0 ; sys_platform == "linux"
-e git+https://github.com/NVIDIA/apex.git#egg=apex
git+https://github.com/org/repo.git
--index-url https://download.pytorch.org/whl/cu118
--extra-index-url=https://pypi.nvidia.com
-f https://download.pytorch.org/whl/torch_stable.html
-i https://pypi.org/simple
nvidia-cudnn-cu12==8.9 \\
    --hash=sha256:abc
"""


def test_requirements_reader_fields():
    reqs, indexes, ctx = _read(REQUIREMENTS, "requirements")
    assert not ctx.errors
    by_key = {r.key: r for r in reqs if r.key}
    assert by_key["torch"].specifier == "==2.1.0+cu121" and by_key["torch"].line == 2
    assert by_key["torch"].column == 1 and by_key["torch"].end_column == len("torch==2.1.0+cu121") + 1
    assert by_key["torchvision"].url.startswith("https://download.pytorch.org/whl/cu121/")
    flash = by_key["flash-attn"]
    assert flash.name == "Flash_Attn" and flash.extras == ("extra",) and flash.marker == 'sys_platform == "linux"'
    assert by_key["apex"].url.startswith("git+https://github.com/NVIDIA/apex.git")
    assert by_key["nvidia-cudnn-cu12"].line == 11
    assert any(r.key is None and r.url == "git+https://github.com/org/repo.git" for r in reqs)
    assert [(i.option, i.line) for i in indexes] == [
        ("--index-url", 7), ("--extra-index-url", 8), ("--find-links", 9), ("--index-url", 10)]
    assert indexes[1].url == "https://pypi.nvidia.com" and indexes[1].column == len("--extra-index-url=") + 1


def test_requirements_findings(scan_source):
    result = scan_source({"requirements.txt": REQUIREMENTS}, select=["LK5"])
    assert not result.errors
    assert _found(result) == [
        ("requirements.txt", 2, "LK501"), ("requirements.txt", 3, "LK501"), ("requirements.txt", 4, "LK504"),
        ("requirements.txt", 5, "LK504"), ("requirements.txt", 7, "LK502"), ("requirements.txt", 8, "LK502"),
        ("requirements.txt", 11, "LK503"),
    ]
    flash = next(f for f in result.findings if f.rule == "LK504" and f.line == 4)
    assert 'sys_platform == "linux"' in flash.message
    assert "scaled_dot_product_attention" in flash.suggestion and "rocm:" in flash.suggestion


def test_malformed_line_next_to_valid_ones(scan_source):
    text = "flash-attn\nthis is not $$ valid\n--no-such-option\npynvml\n"
    result = scan_source({"requirements.txt": text}, select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK504"), ("requirements.txt", 4, "LK506")]
    messages = sorted(e.message for e in result.errors)
    assert [e.kind for e in result.errors] == ["parse", "parse"]
    assert messages[0].startswith("line 2:") and messages[1].startswith("line 3:")


def test_include_read_under_its_own_path(scan_source):
    files = {
        "requirements.txt": "-r deps/base.in.txt\n-c deps/pins.cfg\ntorch\n",
        "deps/base.in.txt": "xformers\n-r ../common.lst\n",  # not a requirements name: discovery skips it
        "deps/pins.cfg": "pynvml==11.5\n",
        "common.lst": "pycuda\n",
    }
    result = scan_source(files, select=["LK5"])
    assert not result.errors
    assert _found(result) == [("common.lst", 1, "LK505"), ("deps/base.in.txt", 1, "LK504"),
                              ("deps/pins.cfg", 1, "LK506")]


def test_discoverable_include_is_not_read_twice(scan_source):
    files = {"requirements.txt": "-r requirements-gpu.txt\n", "requirements-gpu.txt": "flash-attn\n"}
    result = scan_source(files, select=["LK5"])
    assert _found(result) == [("requirements-gpu.txt", 1, "LK504")]


def test_missing_include_is_an_error(scan_source):
    result = scan_source({"requirements.txt": "-r missing.txt\nflash-attn\n"}, select=["LK5"])
    assert _found(result) == [("requirements.txt", 2, "LK504")]
    assert [(e.path, e.kind) for e in result.errors] == [("requirements.txt", "read")]
    assert "missing.txt" in result.errors[0].message


def test_include_cycle_is_an_error(scan_source):
    files = {"requirements.txt": "-r a.txt\n", "a.txt": "-r b.txt\nxformers\n", "b.txt": "-r a.txt\npycuda\n"}
    result = scan_source(files, select=["LK5"])
    assert _found(result) == [("a.txt", 2, "LK504"), ("b.txt", 2, "LK505")]
    assert [(e.path, e.kind) for e in result.errors] == [("b.txt", "include-cycle")]


def test_undecodable_requirements_file(scan_source):
    files = {"requirements.txt": b"flash-attn\n\xff\xfe bad\n", "requirements-dev.txt": "pynvml\n"}
    result = scan_source(files, select=["LK5"])
    assert _found(result) == [("requirements-dev.txt", 1, "LK506")]
    assert [(e.path, e.kind) for e in result.errors] == [("requirements.txt", "decode")]


def test_undecodable_include(scan_source):
    files = {"requirements.txt": "-r extra.txt\nxformers\n", "extra.txt": b"\xff\xfe\n"}
    result = scan_source(files, select=["LK5"])
    assert _found(result) == [("requirements.txt", 2, "LK504")]
    assert [(e.path, e.kind) for e in result.errors] == [("extra.txt", "decode")]


# -- pyproject.toml -------------------------------------------------------------------------------

PYPROJECT = """\
[build-system]
requires = ["setuptools", "torch==2.3.0+cu121"]

[project]
name = "demo"
description = "nvidia-ml-py and flash-attn are mentioned here only"
dependencies = [
    "torch>=2.3",
    "xformers; sys_platform == 'linux'",
]

[project.optional-dependencies]
gpu = ["flash-attn>=2.5", "torch"]

[dependency-groups]
dev = ["pynvml", {include-group = "lint"}]
lint = ["ruff"]

[tool.uv]
index-url = "https://pypi.org/simple"
extra-index-url = ["https://pypi.nvidia.com"]
find-links = ["https://download.pytorch.org/whl/cu121/torch_stable.html"]

[[tool.uv.index]]
name = "pytorch-cu121"
url = "https://download.pytorch.org/whl/cu121"

[[tool.uv.index]]
name = "pytorch-cpu"
url = "https://download.pytorch.org/whl/cpu"

[tool.uv.sources]
torch = [
  { index = "pytorch-cu121", marker = "sys_platform == 'linux'" },
  { index = "pytorch-cpu", marker = "sys_platform != 'linux'" },
]
torchvision = { index = "pytorch-cpu" }

[tool.poetry.dependencies]
python = "^3.11"
cupy-cuda12x = "^13.0"
torchaudio = { version = "2.3.0+cu121", source = "torch-gpu", markers = "sys_platform == 'linux'" }

[tool.poetry.group.dev.dependencies]
nvitop = "*"

[[tool.poetry.source]]
name = "torch-gpu"
url = "https://download.pytorch.org/whl/cu118"
"""


def test_pyproject_reader_fields():
    reqs, indexes, ctx = _read(PYPROJECT, "pyproject")
    assert not ctx.errors
    origins = {(r.key, r.origin, r.group, r.line) for r in reqs}
    assert ("torch", "build-system.requires", None, 2) in origins
    assert ("xformers", "project.dependencies", None, 9) in origins
    assert ("flash-attn", "project.optional-dependencies", "gpu", 13) in origins
    assert ("torch", "project.optional-dependencies", "gpu", 13) in origins
    assert ("pynvml", "dependency-groups", "dev", 16) in origins
    assert ("cupy-cuda12x", "tool.poetry.dependencies", None, 41) in origins
    assert ("nvitop", "tool.poetry.group", "dev", 45) in origins
    audio = next(r for r in reqs if r.key == "torchaudio")
    assert audio.specifier == "2.3.0+cu121" and audio.marker == "sys_platform == 'linux'"
    assert not any(r.key == "python" for r in reqs)
    kinds = [(i.option, i.name, i.package, i.line) for i in indexes]
    assert ("tool.uv.extra-index-url", None, None, 21) in kinds
    assert ("tool.uv.find-links", None, None, 22) in kinds
    assert ("tool.uv.index", "pytorch-cu121", None, 26) in kinds
    assert ("tool.uv.sources", "pytorch-cu121", "torch", 34) in kinds
    assert ("tool.uv.sources", "pytorch-cpu", "torchvision", 37) in kinds
    assert ("tool.poetry.source", "torch-gpu", None, 49) in kinds
    assert ("tool.poetry.dependencies.source", "torch-gpu", "torchaudio", 42) in kinds


def test_pyproject_findings(scan_source):
    result = scan_source({"pyproject.toml": PYPROJECT}, select=["LK5"])
    assert not result.errors
    assert _found(result) == [("pyproject.toml", line, rule) for line, rule in [
        (2, "LK501"), (9, "LK504"), (13, "LK504"), (16, "LK506"), (21, "LK502"), (22, "LK502"), (26, "LK502"),
        (34, "LK502"), (41, "LK504"), (42, "LK501"), (42, "LK502"), (45, "LK506"), (49, "LK502")]]


def test_malformed_toml_is_one_error(scan_source):
    files = {"pyproject.toml": '[project]\nname = x\ndependencies = ["flash-attn"]\n', "requirements.txt": "pycuda\n"}
    result = scan_source(files, select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK505")]
    assert [(e.path, e.kind) for e in result.errors] == [("pyproject.toml", "parse")]
    assert "line 2" in result.errors[0].message


def test_invalid_pep508_string_in_pyproject(scan_source):
    text = '[project]\nname = "x"\ndependencies = ["flash-attn >>= 2", "pycuda"]\n'
    result = scan_source({"pyproject.toml": text}, select=["LK5"])
    assert ("pyproject.toml", 3, "LK505") in _found(result)
    assert [e.kind for e in result.errors] == ["parse"] and "line 3" in result.errors[0].message


def test_pyproject_description_is_not_a_dependency(scan_source):
    text = '[project]\nname = "x"\ndescription = "pycuda, tensorrt, pypi.nvidia.com"\nkeywords = ["flash-attn"]\n'
    assert scan_source({"pyproject.toml": text}, select=["LK5"]).findings == []


# -- setup.cfg ------------------------------------------------------------------------------------

def test_setup_cfg(scan_source):
    text = ("[metadata]\nname = x\ndescription = pycuda helpers\n\n[options]\ninstall_requires =\n    torchvision\n"
            "    torch==2.0.1+cu117\n    # pycuda\nsetup_requires = triton==2.0.0\n"
            "dependency_links = https://download.pytorch.org/whl/cu117\n\n[options.extras_require]\n"
            "trt =\n    tensorrt; platform_system == \"Linux\"\n"
            "serve =\n    pycuda\n")
    result = scan_source({"setup.cfg": text}, select=["LK5"])
    assert not result.errors
    # the extra named for TensorRT is where its runtime belongs (scoped); another extra's pycuda is reported
    assert _found(result) == [("setup.cfg", 8, "LK501"), ("setup.cfg", 10, "LK507"), ("setup.cfg", 11, "LK502"),
                              ("setup.cfg", 17, "LK505")]


def test_malformed_setup_cfg(scan_source):
    result = scan_source({"setup.cfg": "install_requires = pycuda\n[options\n", "requirements.txt": "pycuda\n"},
                         select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK505")]
    assert [(e.path, e.kind, e.message.split(":")[0]) for e in result.errors] == [
        ("setup.cfg", "parse", "line 1"), ("setup.cfg", "parse", "line 2")]


def test_one_bad_setup_cfg_line_keeps_the_other_dependencies(scan_source):
    """configparser dropped the whole file for one unreadable line; each bad line is now its own
    error and every other dependency still counts, at its own position."""
    text = ("[options]\ninstall_requires =\n    pycuda\nthis line is not an option\n"
            "setup_requires =\n    cupy-cuda12x  # gpu\n[options.extras_require]\nfast = tensorrt\n")
    result = scan_source({"setup.cfg": text}, select=["LK5"])
    assert _found(result) == [("setup.cfg", 3, "LK505"), ("setup.cfg", 6, "LK504"), ("setup.cfg", 8, "LK505")]
    assert [(e.kind, e.message.split(":")[0]) for e in result.errors] == [("parse", "line 4")]
    cupy = next(f for f in result.findings if f.line == 6)
    assert (cupy.column, cupy.end_column) == (5, 17) and cupy.snippet == "cupy-cuda12x  # gpu"


# -- setup.py -------------------------------------------------------------------------------------

SETUP_PY = '''\
"""Install with flash-attn for speed."""
import setuptools
from setuptools import setup as make

BASE = ["numpy", "torch"]
GPU = BASE + ["xformers"]
EXTRAS = {"fast": ["tensorrt"]}
EXTRAS["mon"] = ["pynvml"]
BASE.append("pycuda")


def main():
    make(
        name="demo",
        description="needs nvidia-ml-py",
        install_requires=GPU,
        extras_require=EXTRAS,
        setup_requires=("cupy-cuda12x",),
        tests_require=list(["nvidia-cudnn-cu12"]),
        dependency_links=["https://pypi.ngc.nvidia.com"],
    )


if __name__ == "__main__":
    main()
'''


def test_setup_py(scan_source):
    result = scan_source({"setup.py": SETUP_PY}, select=["LK5"])
    assert not result.errors
    assert _found(result) == [("setup.py", line, rule) for line, rule in [
        (6, "LK504"), (7, "LK505"), (8, "LK506"), (9, "LK505"), (18, "LK504"), (19, "LK503"), (20, "LK502")]]


def test_setuptools_setup_attribute_and_dict_call(scan_source):
    text = "import setuptools\nsetuptools.setup(extras_require=dict(gpu=['flash-attn']))\n"
    assert _found(scan_source({"setup.py": text}, select=["LK5"])) == [("setup.py", 2, "LK504")]


def test_setup_py_syntax_error_is_an_error(scan_source):
    result = scan_source({"setup.py": "setup(install_requires=['pycuda'\n", "requirements.txt": "xformers\n"},
                         select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK504")]
    assert [(e.path, e.kind) for e in result.errors] == [("setup.py", "parse")]


# -- rule details ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "rule"), [
    ("nvidia-nccl-cu12", "LK503"), ("nvidia-cuda-runtime", "LK503"), ("cuda-toolkit[cublas]==13.0.3", "LK503"),
    ("nvidia-ml-py", "LK506"), ("nvidia-dali-cuda120", "LK504"), ("nvidia-cutlass-dsl", "LK505"),
    ("nvidia-modelopt[torch]", "LK505"), ("tensorrt-cu12", "LK505"), ("cumm-cu118", "LK505"),
    ("cudf-cu12", "LK504"), ("jax-cuda12-plugin", "LK504"), ("faiss-gpu-cu12", "LK507"), ("pytorch-triton", "LK507"),
    ("torch-xla[tpu]", "LK508"), ("mmcv-full==1.7.2", "LK504"), ("auto-gptq", "LK504"),
    ("vllm>=0.22", "LK504"),  # catalogue Q17: the PyPI wheel is a CUDA build; other targets install their own
])
def test_package_table(line, rule, scan_source):
    result = scan_source({"requirements.txt": line + "\n"}, select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, rule)]


@pytest.mark.parametrize("line", [
    "torch", "torch==2.5.1+cpu", "deepspeed", "triton", "bitsandbytes>=0.50",
    "faiss-cpu", "onnxruntime", "jax[tpu]", "tensorflow", "pytorch-triton-rocm", "--index-url https://download.pytorch.org/whl/rocm6.2",
    "-f https://download.pytorch.org/whl/torch_stable.html", "numba",
])
def test_portable_lines(line, scan_source):
    assert scan_source({"requirements.txt": line + "\n"}, select=["LK5"]).findings == []


def test_poetry_version_floor(scan_source):
    text = '[tool.poetry.dependencies]\nbitsandbytes = "^0.50"\nbnb = "*"\ntriton = "*"\n'
    assert scan_source({"pyproject.toml": text}, select=["LK5"]).findings == []
    text = '[tool.poetry.dependencies]\nbitsandbytes = "^0.43"\ntriton = "2.1.0"\n'
    assert _found(scan_source({"pyproject.toml": text}, select=["LK5"])) == [
        ("pyproject.toml", 2, "LK507"), ("pyproject.toml", 3, "LK507")]


def test_uv_source_naming_undefined_cuda_index(scan_source):
    text = '[tool.uv.sources]\ntorch = { index = "pytorch-cu128" }\nvision = { index = "internal" }\n'
    assert _found(scan_source({"pyproject.toml": text}, select=["LK5"])) == [("pyproject.toml", 2, "LK502")]


def test_index_option_on_a_requirement_line(scan_source):
    text = "torch>=2.1 --index-url https://download.pytorch.org/whl/cu121\n"
    result = scan_source({"requirements.txt": text}, select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK502")]
    assert result.findings[0].column == text.index("https") + 1


@pytest.mark.parametrize("files", [
    {"requirements/cuda.txt": "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1+cu121\nflash-attn\n"},
    {"requirements-cu121.txt": "nvidia-cudnn-cu12\npycuda\n"},
    {"requirements/cuda/extra.txt": "xformers\n"},
    {"pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\ncuda12 = ["flash-attn", "pynvml"]\n'},
    {"pyproject.toml": '[dependency-groups]\nnvidia = ["tensorrt"]\n'},
    {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["flash-attn; extra == \'cuda\'"]\n'},
    {"setup.cfg": "[options.extras_require]\ncuda =\n    xformers\n"},
    {"setup.py": "from setuptools import setup\nsetup(extras_require={'cu118': ['cupy-cuda11x']})\n"},
    {"requirements/trt_llm.txt": "tensorrt_llm==0.17\nnvidia-modelopt\n"},  # an NVIDIA-only runtime's own list
    {"requirements-tensorrt.txt": "tensorrt==10.0\n"},
])
def test_cuda_scoped_places_are_not_lock_in(files, scan_source):
    assert scan_source(files, select=["LK5"]).findings == []


@pytest.mark.parametrize("name", ["requirements/start.txt", "requirements-strtools.txt", "requirements/portrait.txt"])
def test_trap_trt_inside_another_word_is_no_tensorrt_scope(name, scan_source):
    assert _found(scan_source({name: "tensorrt==10.0\n"}, select=["LK5"])) == [(name, 1, "LK505")]


def test_cuda_guarded_setup_py_branch(scan_source):
    text = ("import torch\nfrom setuptools import setup\nreqs = ['numpy']\n"
            "if torch.cuda.is_available() and not IS_ROCM:\n    reqs.append('nvidia-ml-py')\nelse:\n    pass\n"
            "reqs.append('pycuda')\nsetup(install_requires=reqs)\n")
    assert _found(scan_source({"setup.py": text}, select=["LK5"])) == [("setup.py", 8, "LK505")]


@pytest.mark.parametrize("line", [
    "triton==3.8.0+xpu",
    "triton @ https://github.com/triton-lang/triton-cpu/releases/download/v3.8.0/triton-3.8.0-cp312-linux_x86_64.whl",
    "pytorch-triton-xpu==3.2.0",
])
def test_other_targets_triton_builds(line, scan_source):
    assert scan_source({"requirements.txt": line + "\n"}, select=["LK5"]).findings == []


def test_direct_wheel_url_of_a_kernel_package(scan_source):
    url = ("https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.8/"
           "flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl")
    result = scan_source({"requirements.txt": f"flash-attn @ {url}\n"}, select=["LK5"])
    assert _found(result) == [("requirements.txt", 1, "LK501"), ("requirements.txt", 1, "LK504")]
    build = next(f for f in result.findings if f.rule == "LK501")
    assert "+cu122" in build.message
