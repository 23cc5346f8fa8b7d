"""How far a tie that raises must spread before it fails what ships (rules/verdicts.toml [breadth]):
ties confined to a few of a package's Python files degrade it (the rest runs, what calls into them
fails); spread over a fifth of its files, a one-module package, or in a file installed or built with
it (a dependency at the top, a native source), they fail it. Each form has a trap."""

from __future__ import annotations

import json

from repo_report import judged, report

from auditor.model import Finding
from auditor.portability.verdict import Part, verdicts

PYPROJECT = '[project]\nname = "lib"\n'
PORTABLE = "import torch\n\n\ndef f{n}(x):\n    return x * {n}\n"
HARD_CODED = "import torch\n\n\ndef export(x):\n    return x.to('cuda')\n"


def package(modules: int, raising: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A package `lib` of `modules` Python files (its __init__ included), `raising` of them with a
    hard-coded cuda device."""
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": ""}
    for n in range(1, modules):
        files[f"lib/m{n}.py"] = HARD_CODED if n <= raising else PORTABLE.format(n=n)
    return {**files, **(extra or {})}


def test_a_tie_in_one_of_many_modules_degrades_the_package(tmp_path, capsys):
    document = report(tmp_path, package(modules=12, raising=1), capsys)
    assert judged(document)["cpu"] == "runs-degraded"
    first = document["verdicts"]["cpu"]["reasons"][0]
    assert first["path"] == "lib/m1.py"
    assert first["why"].startswith("only 1 of its 12 Python files raises on CPU (lib/m1.py)")
    assert "what calls into it fails" in first["why"]
    # what raises there is still named as failing, and the finding itself still raises
    assert any(r["why"].startswith('a "cuda" device choice') for r in document["verdicts"]["cpu"]["reasons"][1:])
    assert all(f["targets"]["cpu"] == "raises" for f in document["findings"] if f["path"] == "lib/m1.py")
    assert judged(document)["rocm"] == "runs"  # "cuda" is HIP there


def test_the_package_component_judges_the_same_way(tmp_path, capsys):
    document = report(tmp_path, package(modules=12, raising=1), capsys)
    lib = next(c for c in document["components"] if c["name"] == "lib")
    assert lib["verdicts"]["cpu"]["verdict"] == "runs-degraded"


def test_trap_ties_spread_over_a_fifth_of_the_modules_fail_it(tmp_path, capsys):
    document = report(tmp_path, package(modules=10, raising=2), capsys)  # 2 of 10: the share itself
    assert judged(document)["cpu"] == "fails"


def test_trap_a_one_module_package_that_raises_fails(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": HARD_CODED}
    assert judged(report(tmp_path, files, capsys))["cpu"] == "fails"


def test_trap_a_dependency_the_package_installs_fails_it_wherever_it_raises(tmp_path, capsys):
    pyproject = '[project]\nname = "lib"\ndependencies = ["flash-attn==2.5.8"]\n'
    document = report(tmp_path, package(modules=12, raising=1, extra={"pyproject.toml": pyproject}), capsys)
    assert judged(document)["cpu"] == "fails"
    assert any(r["path"] == "pyproject.toml" for r in document["verdicts"]["cpu"]["reasons"])


def test_trap_a_native_source_built_with_the_package_fails_it(tmp_path, capsys):
    kernel = "__global__ void add(float *x) { x[threadIdx.x] += 1; }\n"
    document = report(tmp_path, package(modules=12, raising=0, extra={"csrc/add.cu": kernel}), capsys)
    assert judged(document)["cpu"] == "fails"


def test_a_requirements_file_deep_in_the_package_is_no_install_file(tmp_path, capsys):
    # ts/handler_utils/preprocess/built-in/requirements.txt: what one handler needs, not `pip install lib`
    extra = {"lib/handlers/video/requirements.txt": "nvidia-dali-cuda110>=1.27.0\n"}
    document = report(tmp_path, package(modules=12, raising=0, extra=extra), capsys)
    assert any(f["path"] == "lib/handlers/video/requirements.txt" for f in document["findings"])
    assert judged(document)["cpu"] == "runs-degraded"
    # the same requirement at the top is what the package installs
    top = report(tmp_path / "top", package(modules=12, raising=0, extra={"requirements.txt": "nvidia-dali-cuda110\n"}),
                 capsys)
    assert judged(top)["cpu"] == "fails"


def test_a_dockerfile_inside_a_package_folder_is_a_container(tmp_path, capsys):
    extra = {"lib/deploy/docker/Dockerfile": "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\n",
             "lib/deploy/docker-compose.yml": "services:\n  app:\n    runtime: nvidia\n"}
    document = report(tmp_path, package(modules=4, raising=0, extra=extra), capsys)
    kinds = {f["path"]: f["component"] for f in document["findings"]}
    assert kinds["lib/deploy/docker/Dockerfile"] == "containers"
    assert kinds["lib/deploy/docker-compose.yml"] == "containers"
    assert judged(document)["cpu"] == "runs"


# -- the verdict function on its own --------------------------------------------------------------
def finding(path: str, line: int = 3) -> Finding:
    return Finding(path, line, 1, line, 5, "LK101", "hardcoded-cuda-device", "device", "major", "m", "s",
                   {"rocm": "works", "tpu": "raises", "trainium": "raises", "mps": "raises", "xpu": "raises",
                    "cpu": "raises", "npu": "raises"})


def test_without_the_part_every_tie_that_raises_fails():
    assert verdicts([finding("lib/a.py")])["cpu"].verdict == "fails"  # Part(): size not known


def test_the_share_counts_files_not_findings():
    many_in_one = [finding("lib/a.py", line) for line in range(3, 30)]
    assert verdicts(many_in_one, part=Part(files=10))["cpu"].verdict == "runs-degraded"
    assert verdicts([finding("lib/a.py"), finding("lib/b.py")], part=Part(files=10))["cpu"].verdict == "fails"


def test_a_missed_file_still_makes_a_confined_verdict_unknown():
    from auditor.model import FileError

    missed = [FileError("lib/z.py", "internal", "boom")]
    assert verdicts([finding("lib/a.py")], missed, part=Part(files=50))["cpu"].verdict == "unknown"


def test_the_plan_judges_what_ships_as_the_report_does(tmp_path, capsys):
    from auditor.plan.command import PlanRequest, run_plan

    files = package(modules=12, raising=1)
    document = report(tmp_path, files, capsys)
    plan = json.loads(run_plan(PlanRequest(str(tmp_path), "cpu", "json", cache=False)))
    assert plan["headline"]["verdict"] == judged(document)["cpu"] == "runs-degraded"
    assert plan["headline"]["blockers"][0]["why"].startswith("only 1 of its 12 Python files")


def test_a_cuda_index_in_dependency_links_installs_nothing(tmp_path, capsys):
    # pip has ignored dependency_links since 19.0 (composer's NVIDIA redist link): reported, info, works
    setup = ("from setuptools import setup\nsetup(name='lib', packages=['lib'],\n"
             "      dependency_links=['https://developer.download.nvidia.com/compute/redist'])\n")
    document = report(tmp_path, {"setup.py": setup, "lib/__init__.py": ""}, capsys)
    links = [f for f in document["findings"] if f["rule"] == "LK502"]
    assert links and links[0]["severity"] == "info" and set(links[0]["targets"].values()) == {"works"}
    assert "pip has ignored `dependency_links`" in links[0]["message"]
    assert set(judged(document).values()) == {"runs"}
    # trap: the same index as a requirements option is read by pip
    other = report(tmp_path / "req", {"setup.py": setup.replace("dependency_links", "name2"), "lib/__init__.py": "",
                                      "requirements.txt": "--extra-index-url https://pypi.nvidia.com\ntorch\n"}, capsys)
    assert judged(other)["mps"] == "fails"


EXPLICIT_INDEX = ('[project]\nname = "lib"\ndependencies = ["torch"]\n\n[[tool.uv.index]]\nname = "pytorch-cu124"\n'
                  'url = "https://download.pytorch.org/whl/cu124"\nexplicit = true\n')


def test_an_explicit_index_installs_only_what_a_source_pins_to_it(tmp_path, capsys):
    # uv's `explicit = true` (Poetry's priority "explicit"): no package installs from the index unless
    # a source entry pins it there, and that entry is judged on its own (kornia's unused cu121/cu124)
    document = report(tmp_path, {"pyproject.toml": EXPLICIT_INDEX, "lib/__init__.py": ""}, capsys)
    (index,) = [f for f in document["findings"] if f["rule"] == "LK502"]
    assert index["severity"] == "info" and set(index["targets"].values()) == {"works"}
    assert "an explicit index" in index["message"] and set(judged(document).values()) == {"runs"}
    poetry = ('[tool.poetry]\nname = "lib"\n\n[[tool.poetry.source]]\nname = "torch-gpu"\n'
              'url = "https://download.pytorch.org/whl/cu118"\npriority = "explicit"\n')
    document = report(tmp_path / "poetry", {"pyproject.toml": poetry, "lib/__init__.py": ""}, capsys)
    assert [f["severity"] for f in document["findings"] if f["rule"] == "LK502"] == ["info"]


def test_trap_a_source_that_pins_torch_to_an_explicit_cuda_index_installs_cuda(tmp_path, capsys):
    pinned = EXPLICIT_INDEX + '\n[tool.uv.sources]\ntorch = { index = "pytorch-cu124" }\n'
    document = report(tmp_path, {"pyproject.toml": pinned, "lib/__init__.py": ""}, capsys)
    severities = sorted(f["severity"] for f in document["findings"] if f["rule"] == "LK502")
    assert severities == ["info", "major"] and judged(document)["mps"] == "fails"
    # and an index that is not explicit serves every package
    default = EXPLICIT_INDEX.replace("explicit = true\n", "")
    document = report(tmp_path / "default", {"pyproject.toml": default, "lib/__init__.py": ""}, capsys)
    assert [f["severity"] for f in document["findings"] if f["rule"] == "LK502"] == ["major"]

def test_trap_a_native_build_in_one_module_fails_the_package(tmp_path, capsys):
    # a CUDA extension a module compiles at run time is the package's build, wherever it is written
    jit = ("from torch.utils.cpp_extension import load\n\n\ndef ops():\n"
           "    return load(name='ops', sources=['ops.cpp', 'ops.cu'])\n")
    document = report(tmp_path, package(modules=12, raising=0, extra={"lib/ops.py": jit}), capsys)
    assert judged(document)["cpu"] == "fails"


def test_a_full_precision_region_pinned_to_cuda_loses_nothing_a_run_needs(tmp_path, capsys):
    # `autocast("cuda", enabled=False)` forces float32 on CUDA; elsewhere it disables nothing, so the
    # step runs in the device's own autocast precision: numerics (slight), the program runs
    region = ("import torch\nfrom torch import autocast\n\n\n@autocast('cuda', enabled = False)\n"
              "def q_sample(x):\n    return x * 2\n")
    document = report(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='lib', packages=['lib'])\n",
                                 "lib/__init__.py": "", "lib/schedule.py": region}, capsys)
    (found,) = [f for f in document["findings"] if f["path"].endswith("schedule.py")]
    assert found["rule"] == "LK108" and "not kept in full precision" in found["message"]
    assert judged(document)["tpu"] == "runs" and document["scores"]["tpu"] < 100
    # trap: mixed precision itself pinned to CUDA turns off elsewhere: the main path loses it
    amp = region.replace("enabled = False", "dtype=torch.float16")
    document = report(tmp_path / "amp", {"setup.py": "from setuptools import setup\nsetup(name='lib', packages=['lib'])\n",
                                         "lib/__init__.py": "", "lib/schedule.py": amp}, capsys)
    assert [f["rule"] for f in document["findings"] if f["path"].endswith("schedule.py")] == ["LK106"]
    assert judged(document)["tpu"] == "runs-degraded"
