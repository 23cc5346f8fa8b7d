"""A script repository whose scripts sit in several folders (pytorch/examples: one program per
folder, each run as `python folder/script.py`, which imports only from its own folder): each folder
of scripts gets its own device module beside it, or, where every module name is taken there, keeps
its ties with the reason. Run on the CPU-only torch of the test extra, each fixed script runs."""

from __future__ import annotations

import pytest
from execution_runner import run_program

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan

TRAIN = "import torch\n\nmodel = torch.nn.Linear(2, 1).cuda()\nRESULT.append(model(torch.ones(1, 2).cuda()).shape[1])\n"
EVAL = ('import torch\n\nx = torch.ones(3, device="cuda")\nprint("cuda is not used here")  # x.cuda()\n'
        "RESULT.append(int(x.sum().item()))\n")
MARKER = "The one place this project chooses its device (lockin-auditor)"


def fix(root, unsafe: bool = True):
    options = Settings(cache=False, jobs=1, torch_version="2.13")
    return fix_paths(scan([str(root)], options), unsafe, True, options.max_bytes)


def write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_each_folder_of_scripts_gets_its_own_module(tmp_path):
    write(tmp_path, {"vision/train.py": TRAIN, "vision/other.py": "print(1)\n", "nlp/eval.py": EVAL})
    run = fix(tmp_path)
    assert not run.errors, run.errors
    assert sorted(c.path for c in run.created) == ["nlp/device_choice.py", "vision/device_choice.py"]
    for module in ("vision/device_choice.py", "nlp/device_choice.py"):
        assert MARKER in (tmp_path / module).read_text(encoding="utf-8")
    assert (tmp_path / "vision/train.py").read_text() == (
        "import torch\nfrom device_choice import get_device\n\nmodel = torch.nn.Linear(2, 1).to(get_device())\n"
        "RESULT.append(model(torch.ones(1, 2).to(get_device())).shape[1])\n")
    evaluated = (tmp_path / "nlp/eval.py").read_text()
    assert 'x = torch.ones(3, device=get_device())\nprint("cuda is not used here")  # x.cuda()\n' in evaluated
    assert fix(tmp_path).fixed_count == 0 and not (tmp_path / "device_choice.py").exists()  # a second run: nothing


def test_a_package_beside_a_folder_of_scripts_reaches_that_folders_module(tmp_path):
    write(tmp_path, {"a/train.py": TRAIN, "a/b.py": "print(1)\n", "c/run.py": "from models import net\n",
                     "c/models/__init__.py": "", "c/models/net.py": "import torch\nW = torch.zeros(2).cuda()\n"})
    assert not fix(tmp_path).errors
    assert (tmp_path / "c/models/net.py").read_text() == (
        "import torch\nfrom device_choice import get_device\nW = torch.zeros(2).to(get_device())\n")
    assert (tmp_path / "c/device_choice.py").exists() and not (tmp_path / "c/models/device_choice.py").exists()


def test_a_package_that_a_packaging_file_installs_does_not_import_the_folders_module(tmp_path):
    # trap (text-generation-inference's server/): run from anywhere once installed, the package does not see
    # server/, so `from device_choice import ...` would fail there; the folder's own script still gets it
    write(tmp_path, {"a/train.py": TRAIN, "a/b.py": "print(1)\n", "server/pyproject.toml": "[project]\nname='srv'\n",
                     "server/tool.py": "import torch\nW = torch.zeros(2).cuda()\n",
                     "server/srv/__init__.py": "", "server/srv/cache.py": "import torch\nB = torch.ones(2, device='cuda')\n"})
    run = fix(tmp_path)
    assert "device='cuda'" in (tmp_path / "server/srv/cache.py").read_text()
    assert "to(get_device())" in (tmp_path / "server/tool.py").read_text()
    held = [x.fix.reason for f in run.files if f.path == "server/srv/cache.py" for x in (f.remaining or [])
            if x.rule == "LK101" and x.fix is not None]
    assert held and "script-level module" in held[0], held


def test_a_folder_whose_module_names_are_taken_keeps_its_ties_with_the_reason(tmp_path):
    # trap: device_choice.py and _lockin_device.py there are the project's own files, never written over
    write(tmp_path, {"a/train.py": TRAIN, "a/more.py": "print(1)\n", "b/eval.py": EVAL,
                     "b/device_choice.py": "CHOICE = 1\n", "b/_lockin_device.py": "OTHER = 2\n"})
    run = fix(tmp_path)
    assert (tmp_path / "b/device_choice.py").read_text() == "CHOICE = 1\n"
    assert 'device="cuda"' in (tmp_path / "b/eval.py").read_text()
    held = [x.fix.reason for f in run.files if f.path == "b/eval.py" for x in (f.remaining or [])
            if x.rule == "LK101" and x.fix is not None]
    assert held and "script-level module" in held[0] and "names are taken" in held[0], held


@pytest.mark.slow
def test_the_fixed_scripts_of_both_folders_run_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    write(tmp_path, {"vision/train.py": TRAIN, "vision/other.py": "print(1)\n", "nlp/eval.py": EVAL,
                     "requirements.txt": "torch>=2.8\n"})
    assert run_program(tmp_path / "nlp/eval.py")["error"].startswith(("RuntimeError", "AssertionError"))
    assert not fix(tmp_path).errors
    assert run_program(tmp_path / "vision/train.py")["result"] == 1
    assert run_program(tmp_path / "nlp/eval.py")["result"] == 3
