"""Components of a repository (auditor.analysis.components): the split by path, per kind with the
traps that look like another kind, and the headline that judges only what the repository ships."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor.analysis.components import layout_for
from auditor.cli import main

CUDA = "import torch\nmodel = Net().cuda()\n"
CLEAN = "import torch\nx = torch.ones(2).to(device)\n"
NVIDIA_IMAGE = "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


def layout(root: Path, files: dict[str, str]):
    write(root, files)
    relatives = sorted(str(p.relative_to(root)).replace(os.sep, "/") for p in root.rglob("*") if p.is_file())
    found = layout_for(str(root), relatives)
    return found, {r: found.of(r) for r in relatives}


def report(root: Path, capsys, *extra: str) -> dict:
    here = os.getcwd()
    os.chdir(root)
    try:
        main([".", "--format", "json", "--no-cache", "--exit-zero", *extra])
    finally:
        os.chdir(here)
    return json.loads(capsys.readouterr().out)


def by_name(document: dict) -> dict[str, dict]:
    return {c["name"]: c for c in document["components"]}


# -- the split ------------------------------------------------------------------------------------

def test_pyproject_find_packages_and_an_examples_folder_inside_the_package(tmp_path):
    found, of = layout(tmp_path, {
        "pyproject.toml": '[project]\nname = "mylib"\n[tool.setuptools.packages.find]\nexclude = ["tests*"]\n',
        "mylib/__init__.py": "", "mylib/core.py": CLEAN,
        "mylib/examples/demo.py": CUDA,  # trap: an examples folder inside the package is the package
        "tests/__init__.py": "", "tests/test_core.py": CUDA,
        "examples/train.py": CUDA,
    })
    assert of["mylib/examples/demo.py"] == of["mylib/core.py"] == "mylib"
    assert of["tests/test_core.py"] == "tests"
    assert of["examples/train.py"] == "examples"
    assert of["pyproject.toml"] == "mylib"  # what the package installs is judged with it
    kinds = {c.name: (c.kind, c.shipped) for c in found.components()}
    assert kinds["mylib"] == ("package", True) and kinds["examples"] == ("examples", False)


def test_src_layout(tmp_path):
    _, of = layout(tmp_path, {
        "pyproject.toml": '[project]\nname = "other-name"\n',
        "src/fancy/__init__.py": "", "src/fancy/ops/__init__.py": "", "src/fancy/ops/k.py": CUDA,
        "benchmarks/run.py": CUDA, "train.py": CUDA,
    })
    assert of["src/fancy/ops/k.py"] == "fancy"  # a subpackage is its top-level package
    assert of["benchmarks/run.py"] == "benchmarks"
    assert of["train.py"] == "other"  # a package ships: a loose script is not the headline


def test_setup_py_find_packages_with_exclude(tmp_path):
    _, of = layout(tmp_path, {
        "setup.py": 'from setuptools import setup, find_packages\n'
                    'setup(name="tool", packages=find_packages(exclude=["scripts", "scripts.*", "docs"]))\n',
        "tool/__init__.py": "", "tool/a.py": CLEAN,
        "scripts/__init__.py": "", "scripts/convert.py": CUDA,  # excluded: not the package
        "csrc/kernel.cu": "__global__ void k() {}\n",  # built by the package's setup.py
    })
    assert of["tool/a.py"] == "tool"
    assert of["scripts/convert.py"] == "scripts"
    assert of["csrc/kernel.cu"] == "tool"


def test_pyproject_find_is_a_namespace_find(tmp_path):
    _, of = layout(tmp_path, {
        "pyproject.toml": '[tool.setuptools.packages.find]\ninclude = ["big.core", "big.core.*"]\n',
        "big/core/__init__.py": "", "big/core/m.py": CUDA,  # big/ has no __init__.py
        "big/research/__init__.py": "", "big/research/r.py": CUDA,  # not included
        "pretrain.py": CUDA,
    })
    assert of["big/core/m.py"] == "big.core"
    assert of["big/research/r.py"] == of["pretrain.py"] == "other"


def test_setup_py_literal_packages_and_setup_cfg(tmp_path):
    _, of = layout(tmp_path / "a", {
        "setup.py": 'setup(name="x", packages=["alpha", "alpha.sub"])\n',
        "alpha/__init__.py": "", "alpha/sub/__init__.py": "", "alpha/sub/m.py": CUDA,
        "beta/__init__.py": "", "beta/m.py": CUDA,  # a package folder nobody ships
    })
    assert of["alpha/sub/m.py"] == "alpha" and of["beta/m.py"] == "other"
    _, of = layout(tmp_path / "b", {
        "setup.cfg": "[options]\npackages = find:\npackage_dir =\n    = src\n[options.packages.find]\nwhere = src\n",
        "src/gamma/__init__.py": "", "src/gamma/m.py": CUDA,
    })
    assert of["src/gamma/m.py"] == "gamma"


def test_poetry_hatch_and_a_folder_named_for_the_project(tmp_path):
    _, of = layout(tmp_path / "p", {
        "pyproject.toml": '[tool.poetry]\nname = "p"\npackages = [{include = "delta", from = "lib"}]\n',
        "lib/delta/__init__.py": "", "lib/delta/m.py": CUDA,
    })
    assert of["lib/delta/m.py"] == "delta"
    _, of = layout(tmp_path / "h", {
        "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/eps"]\n',
        "src/eps/__init__.py": "", "src/eps/m.py": CUDA,
    })
    assert of["src/eps/m.py"] == "eps"
    _, of = layout(tmp_path / "n", {
        "setup.py": 'setup(name="zeta-lib")\n',  # no package list: the folder named for the project
        "zeta_lib/__init__.py": "", "zeta_lib/m.py": CUDA, "helpers/__init__.py": "", "helpers/h.py": CUDA,
    })
    assert of["zeta_lib/m.py"] == "zeta_lib" and of["helpers/h.py"] == "other"


def test_a_repository_without_a_package_ships_its_programs(tmp_path):
    found, of = layout(tmp_path, {
        "train.py": CUDA, "model/net.py": CUDA, "requirements.txt": "torch\n",
        "example_chat.py": CUDA, "notebooks/a.ipynb": "{}", "Dockerfile": NVIDIA_IMAGE,
        "Dockerfile-cpu": "FROM python:3.11\n", ".github/workflows/ci.yml": "on: push\n", ".gitlab-ci.yml": "x: 1\n",
        "docker-compose.yml": "services: {}\n", "tools/fetch.py": CLEAN, "conftest.py": CLEAN,
    })
    assert of["train.py"] == of["model/net.py"] == of["requirements.txt"] == "programs"
    assert of["example_chat.py"] == "examples"
    assert of["notebooks/a.ipynb"] == "docs"
    assert of["Dockerfile"] == of["Dockerfile-cpu"] == of["docker-compose.yml"] == "containers"
    assert of[".github/workflows/ci.yml"] == of[".gitlab-ci.yml"] == "ci"
    assert of["tools/fetch.py"] == "scripts" and of["conftest.py"] == "tests"
    assert [c.name for c in found.components() if c.shipped] == ["programs"]


def test_a_tests_helper_the_package_imports_stays_in_tests(tmp_path):
    _, of = layout(tmp_path, {
        "pyproject.toml": '[project]\nname = "lib"\n',
        "lib/__init__.py": "from tests.helpers import fixture\n",
        "tests/__init__.py": "", "tests/helpers.py": CUDA,
    })
    assert of["tests/helpers.py"] == "tests" and of["lib/__init__.py"] == "lib"


def test_hostile_packaging_files_give_no_packages(tmp_path):
    _, of = layout(tmp_path, {
        "pyproject.toml": "[tool.setuptools\npackages = ", "setup.py": "packages=find_packages(",
        "a/__init__.py": "", "a/m.py": CUDA,
    })
    assert of["a/m.py"] == "programs"


# -- the headline and the report --------------------------------------------------------------------

LIBRARY = {
    "pyproject.toml": '[project]\nname = "lib"\ndependencies = ["torch"]\n',
    "lib/__init__.py": "", "lib/core.py": CLEAN,
    "examples/train.py": CUDA, "tests/test_core.py": CUDA,
    "Dockerfile": NVIDIA_IMAGE, ".github/workflows/gpu.yml": "jobs:\n  t:\n    container: nvidia/cuda:12.1.0-base\n",
}


def test_examples_tests_and_containers_never_fail_the_headline(tmp_path, capsys):
    document = report(write(tmp_path, LIBRARY), capsys)
    assert document["format_version"] >= 8  # format 8 brought components
    assert {v["verdict"] for v in document["verdicts"].values()} == {"runs"}
    assert document["scores"]["overall"] == 100.0
    parts = by_name(document)
    assert parts["lib"]["kind"] == "package" and parts["lib"]["shipped"] is True
    assert parts["examples"]["verdicts"]["cpu"]["verdict"] == "fails"
    assert parts["examples"]["scores"]["cpu"] < 100
    assert parts["tests"]["verdicts"]["cpu"]["verdict"] == "fails"  # a tests component counts its tests
    assert parts["containers"]["shipped"] is False
    assert all(f["component"] in parts for f in document["findings"])
    assert {f["component"] for f in document["findings"] if f["path"].startswith("examples/")} == {"examples"}


def test_the_package_itself_still_fails(tmp_path, capsys):
    document = report(write(tmp_path, {**LIBRARY, "lib/core.py": CUDA}), capsys)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    assert document["verdicts"]["cpu"]["reasons"][0]["path"] == "lib/core.py"


def test_nothing_shipped_falls_back_to_the_scripts(tmp_path, capsys):
    document = report(write(tmp_path, {"scripts/run.py": CUDA, "examples/e.py": CLEAN}), capsys)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    document = report(write(tmp_path / "clean", {"scripts/run.py": CLEAN, "examples/e.py": CUDA}), capsys)
    assert document["verdicts"]["cpu"]["verdict"] == "runs"


def test_text_and_markdown_show_one_line_per_component(tmp_path, capsys):
    root = write(tmp_path, LIBRARY)
    here = os.getcwd()
    os.chdir(root)
    try:
        main([".", "--no-cache", "--exit-zero", "--color", "never"])
        text = capsys.readouterr().out
        main([".", "--no-cache", "--exit-zero", "--format", "markdown"])
        markdown = capsys.readouterr().out
    finally:
        os.chdir(here)
    assert "Components" in text and "examples (examples, beside" in text and "lib (package, headline" in text
    assert "### Components" in markdown and "| examples | examples |" in markdown and "| lib | package |" in markdown


# -- configuration --------------------------------------------------------------------------------

def test_configured_components_come_first(tmp_path, capsys):
    root = write(tmp_path, {**LIBRARY, "research/exp.py": CUDA,
                            "lockin-auditor.toml": '[components]\nresearch = {paths = ["research"], kind = "examples"}\n'
                                                   'lib = ["lib", "examples/train.py"]\n'})
    document = report(root, capsys)
    parts = by_name(document)
    assert parts["research"]["kind"] == "examples" and parts["research"]["shipped"] is False
    assert parts["lib"]["kind"] == "package"
    assert document["verdicts"]["cpu"]["verdict"] == "fails"  # examples/train.py is now part of lib


@pytest.mark.parametrize(("table", "says"), [
    ('[components]\nx = {paths = ["a"], kind = "pakage"}\n', "unknown kind 'pakage'"),
    ('[components]\nx = {path = ["a"]}\n', "not a component key"),
    ('[components]\nx = {paths = []}\n', "at least one glob"),
    ('components = ["a"]\n', "must be a table"),
])
def test_a_wrong_component_table_exits_2(tmp_path, capsys, table, says):
    root = write(tmp_path, {"a.py": CLEAN, "lockin-auditor.toml": table})
    here = os.getcwd()
    os.chdir(root)
    try:
        code = main([".", "--no-cache"])
    finally:
        os.chdir(here)
    assert code == 2 and says in capsys.readouterr().err


def test_requirements_files_serve_the_component_their_names_say(tmp_path):
    # nested requirements folders are read now (issue 15 item 5): a GPU test's pins are the tests'
    _, of = layout(tmp_path, {
        "pyproject.toml": '[project]\nname = "mylib"\n', "mylib/__init__.py": "",
        "requirements/pytorch/base.txt": "torch\n", "requirements/pytorch/test_gpu.txt": "torch-tensorrt\n",
        "requirements/docs.txt": "sphinx\n", "requirements-dev.txt": "ruff\n", "requirements.txt": "torch\n",
        # trap: "latest" and "cuda" are no role words: the headline's
        "requirements/pytorch/latest-cuda.txt": "torch\n",
    })
    assert of["requirements/pytorch/base.txt"] == of["requirements.txt"] == "mylib"
    assert of["requirements/pytorch/latest-cuda.txt"] == "mylib"
    assert of["requirements/pytorch/test_gpu.txt"] == "tests"
    assert of["requirements/docs.txt"] == "docs" and of["requirements-dev.txt"] == "tests"
