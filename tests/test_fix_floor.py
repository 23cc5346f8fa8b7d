"""The project's torch floor: what each dependency file says, which files count, the override, the
memo in the cache folder, and how the floor decides which fix a finding gets."""

from __future__ import annotations

import os

import pytest

from auditor.config.keys import valid_version
from auditor.config.settings import Settings
from auditor.fix.floor import (
    MEMO_NAME,
    TorchFloor,
    lower_bound,
    read_floor,
    requirement_bound,
    resolve_floor,
    version_tuple,
)
from auditor.pipeline.scan import scan


@pytest.mark.parametrize(("spec", "poetry", "bound"), [
    (">=2.4", False, "2.4"), (">=2.1,<3", False, "2.1"), ("==2.3.1+cu121", False, "2.3.1"), ("~=2.4.0", False, "2.4.0"),
    ("==2.1.*", False, "2.1"), (">2.4", False, "2.4"), ("<2.5", False, None), ("!=2.5", False, None), ("", False, None),
    ("2.1.0", False, None), ("2.1.0", True, "2.1.0"), ("^2.1", True, "2.1"), (">=2.1 <3", True, "2.1"),
    ("^1.13 || ^2.0", True, "1.13"), ("*", True, None), (">=2.1 || <1", True, None),
])
def test_lower_bound(spec, poetry, bound):
    assert lower_bound(spec, poetry=poetry) == bound


@pytest.mark.parametrize(("text", "bound"), [
    ("torch>=2.4", "2.4"), ("torch==2.3.1+cu121", "2.3.1"), ("torch", None), ("torchvision>=0.18", None),
    ("torch (>=2.2)", "2.2"), ('torch[opt]>=2.5; sys_platform == "linux"', "2.5"), ("PyTorch>=1.9", "1.9"),
    ("torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp311-cp311-linux_x86_64.whl", "2.1.0"),
    ("torch-scatter>=2.1", None),
])
def test_requirement_bound(text, bound):
    assert requirement_bound(text) == bound


def test_versions_compare_by_release():
    assert version_tuple("2.10") > version_tuple("2.9") and version_tuple("2.4.0a0") == (2, 4, 0)
    assert TorchFloor("2.6.0").allows("2.6") and not TorchFloor("2.5.1").allows("2.6") and TorchFloor("2.5").allows(None)
    assert TorchFloor().allows("2.0") and not TorchFloor().allows("2.3")  # unknown: assumed 2.0
    assert valid_version("2.4") and valid_version("2") and valid_version("2.4.1")
    assert not valid_version("2.4.x") and not valid_version("latest")


def write(root, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def test_each_kind_of_file_and_the_lowest_wins(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.4", "numpy"]\n'
                                       '[project.optional-dependencies]\ncuda = ["torch==2.3.1+cu121"]\n',
                     "requirements.txt": "# torch==1.0 in a comment\n-r other.txt\ntorch>=2.5  # pinned\n"})
    assert read_floor(str(tmp_path)) == TorchFloor("2.3.1", "pyproject.toml")
    (tmp_path / "pyproject.toml").unlink()
    assert read_floor(str(tmp_path)) == TorchFloor("2.5", "requirements.txt")


def test_poetry_setup_cfg_setup_py_and_requirements_folder(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.11"\ntorch = { version = "^2.2" }\n'})
    assert read_floor(str(tmp_path)).version == "2.2"
    (tmp_path / "pyproject.toml").unlink()
    write(tmp_path, {"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    torch>=2.1,<3\n"})
    assert read_floor(str(tmp_path)).version == "2.1"
    (tmp_path / "setup.cfg").unlink()
    write(tmp_path, {"setup.py": '# torch>=1.0 is too old\n"""Needs torch>=1.5."""\nfrom setuptools import setup\n'
                                 'setup(install_requires=["torch>=2.0.1"])\n'})
    assert read_floor(str(tmp_path)) == TorchFloor("2.0.1", "setup.py")
    (tmp_path / "setup.py").unlink()
    write(tmp_path, {"requirements/base.txt": "torch~=2.6.0\n"})
    assert read_floor(str(tmp_path)) == TorchFloor("2.6.0", "requirements/base.txt")


def test_conda_environments_and_container_files(tmp_path):
    write(tmp_path, {"environment.yml": "dependencies:\n  - python=3.11\n  - pytorch=2.4.1\n  - pip:\n    - numpy\n"})
    assert read_floor(str(tmp_path)) == TorchFloor("2.4.1", "environment.yml")
    write(tmp_path, {"Dockerfile": "FROM python:3.11\nRUN pip install --no-cache-dir torch==2.2.0 torchvision\n"})
    assert read_floor(str(tmp_path)) == TorchFloor("2.2.0", "Dockerfile")


def test_what_does_not_count(tmp_path):
    write(tmp_path, {"examples/requirements.txt": "torch==1.8\n",  # another program's needs
                     "requirements.txt": "torch\n",  # no bound
                     "pyproject.toml": "[project\nbroken",  # malformed: says nothing
                     "setup.py": "setup(install_requires=['torch>=' + V])\n"})
    assert read_floor(str(tmp_path)) == TorchFloor()
    assert "assumed 2.0" in TorchFloor().describe() and "--torch-version" in TorchFloor().describe()


def test_symlinked_dependency_files_are_not_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("torch>=1.2\n", encoding="utf-8")
    (tmp_path / "repo").mkdir()
    os.symlink(outside, tmp_path / "repo" / "requirements.txt")
    assert read_floor(str(tmp_path / "repo")) == TorchFloor()


def test_override_wins_and_is_normalised(tmp_path):
    write(tmp_path, {"requirements.txt": "torch>=2.1\n"})
    assert resolve_floor(str(tmp_path), "2.9") == TorchFloor("2.9", "--torch-version")
    assert resolve_floor(str(tmp_path), "2.9", "config") == TorchFloor("2.9", "config")


def test_the_memo_is_reused_while_the_files_stand(tmp_path, monkeypatch):
    write(tmp_path, {"requirements.txt": "torch>=2.1\n"})
    old = 1_000_000_000_000_000_000
    os.utime(tmp_path / "requirements.txt", ns=(old, old))
    memo = tmp_path / "cache"
    assert resolve_floor(str(tmp_path), memo_dir=str(memo)).version == "2.1"
    assert (memo / MEMO_NAME).is_file()
    from auditor.fix import floor

    monkeypatch.setattr(floor, "read_floor", lambda *a, **k: pytest.fail("read again"))
    assert resolve_floor(str(tmp_path), memo_dir=str(memo)).version == "2.1"
    monkeypatch.undo()
    write(tmp_path, {"requirements.txt": "torch>=2.7\n"})  # a new size and mtime: read again
    assert resolve_floor(str(tmp_path), memo_dir=str(memo)).version == "2.7"
    (memo / MEMO_NAME).write_text("{not json", encoding="utf-8")  # a broken memo is only a miss
    assert resolve_floor(str(tmp_path), memo_dir=str(memo)).version == "2.7"
    import json

    stamps = [["requirements.txt", "requirements", (tmp_path / "requirements.txt").stat().st_size,
               (tmp_path / "requirements.txt").stat().st_mtime_ns]]
    tampered = {"format": 1, "stamps": stamps, "version": "9.9 (trust me)", "source": "x"}
    (memo / MEMO_NAME).write_text(json.dumps(tampered), encoding="utf-8")  # the repository's own cache folder
    assert resolve_floor(str(tmp_path), memo_dir=str(memo)).version == "2.7"


LK103 = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def fix_of(root, **options):
    result = scan([str(root)], Settings(select=["LK103"], cache=False, jobs=1, **options))
    (finding,) = result.findings
    return result, finding.fix


def test_the_floor_picks_the_form_and_holds_newer_fixes_back(tmp_path):
    write(tmp_path, {"train.py": LK103})
    _, fix = fix_of(tmp_path, torch_version="2.7")
    assert fix.applicability == "unsafe" and "check_available=True" in fix.edits[0].content and fix.min_torch == "2.7"
    _, fix = fix_of(tmp_path, torch_version="2.6")  # the form torch 2.6 has
    assert fix.applicability == "unsafe" and "if torch.accelerator.is_available() else" in fix.edits[0].content
    _, fix = fix_of(tmp_path, torch_version="2.5")
    assert fix.applicability == "display" and fix.min_torch == "2.6"
    assert fix.reason == "needs torch >= 2.6; the project supports torch 2.5 (from --torch-version)"
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch==2.3.1+cu121"]\n'})
    result, fix = fix_of(tmp_path)
    assert result.floor == TorchFloor("2.3.1", "pyproject.toml")
    assert fix.reason == "needs torch >= 2.6; the project supports torch 2.3.1 (from pyproject.toml)"


def test_the_floor_is_part_of_the_cache_key(tmp_path):
    write(tmp_path, {"repo/train.py": LK103, "repo/requirements.txt": "torch>=2.5\n"})
    repo, cache = tmp_path / "repo", str(tmp_path / "cache")
    first = scan([str(repo)], Settings(select=["LK103"], cache_dir=cache, jobs=1))
    assert first.findings[0].fix.applicability == "display"
    write(tmp_path, {"repo/requirements.txt": "torch>=2.8\n"})
    second = scan([str(repo)], Settings(select=["LK103"], cache_dir=cache, jobs=1))
    assert second.files_parsed == 2 and second.findings[0].fix.applicability == "unsafe"  # a new key: all checked
    third = scan([str(repo)], Settings(select=["LK103"], cache_dir=cache, jobs=1, torch_version="2.5"))
    assert third.findings[0].fix.applicability == "display"
    again = scan([str(repo)], Settings(select=["LK103"], cache_dir=cache, jobs=1))
    assert again.files_parsed == 0 and again.findings[0].fix.applicability == "unsafe"
