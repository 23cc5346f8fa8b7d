"""What lowers a verdict (stop 31): the CPU is the baseline, slight differences and opt-in parts
(features, extras) lose nothing the main path needs, an optional import of another target's package
is that target's path, a sub-project's kernels are its own, a `gpu` module among device siblings is
the CUDA backend, and a callbacks folder holds plugins a run adds."""

from __future__ import annotations

import pytest
from repo_report import judged, report

from auditor.portability.verdict import verdicts

PYPROJECT = '[project]\nname = "lib"\n'


# -- the CPU is the baseline -------------------------------------------------------------------------
AMP = "import torch\n\ndef step(model, x):\n    with torch.cuda.amp.autocast():\n        return model(x)\n"


def test_what_only_degrades_on_the_cpu_is_no_loss_there(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/train.py": AMP}, capsys)
    amp = [f for f in document["findings"] if f["path"] == "lib/train.py"]
    assert amp and all(f["targets"]["cpu"] == "degrades" for f in amp)  # still reported as lost there
    assert judged(document)["cpu"] == "runs"
    assert judged(document)["mps"] == "runs-degraded"  # an accelerator does lose its mixed precision


def test_trap_a_minor_tie_that_raises_on_the_cpu_still_degrades_it(tmp_path, capsys):
    code = "import pynvml\n\ndef usage():\n    pynvml.nvmlInit()\n    return pynvml.nvmlDeviceGetCount()\n"
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/monitor.py": code}, capsys)
    raising = [f for f in document["findings"] if f["targets"]["cpu"] == "raises" and f["severity"] == "minor"]
    assert raising, document["findings"]
    assert judged(document)["cpu"] == "runs-degraded"


# -- slight differences --------------------------------------------------------------------------------
PROPS = ("import torch\n\ndef bf16_ok():\n    if torch.cuda.is_available():\n"
         "        return torch.cuda.get_device_properties(0).major >= 8\n    return False\n")


def test_a_device_property_that_reads_another_value_on_rocm_loses_nothing(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/caps.py": PROPS}, capsys)
    props = [f for f in document["findings"] if f["rule"] == "LK214"]
    assert props and props[0]["targets"]["rocm"] == "degrades"  # the difference is still reported
    assert judged(document)["rocm"] == "runs"


def test_a_cuda_wheel_index_is_slight_but_a_cuda_pin_is_not(tmp_path, capsys):
    index = report(tmp_path / "a", {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu121\n"
                                                          "torch==2.3.0\n", "train.py": "import torch\n"}, capsys)
    assert any(f["rule"] == "LK502" and f["targets"]["rocm"] == "degrades" for f in index["findings"])
    assert judged(index)["rocm"] == "runs"
    pin = report(tmp_path / "b", {"requirements.txt": "torch==2.3.0+cu121\n", "train.py": "import torch\n"}, capsys)
    assert judged(pin)["rocm"] == "runs-degraded"  # trap: `+cu121` never matches a ROCm build


# -- opt-in parts ---------------------------------------------------------------------------------------
def test_a_dependency_in_an_extra_is_opt_in_and_lowers_no_verdict(tmp_path, capsys):
    pyproject = PYPROJECT + '[project.optional-dependencies]\nmonitor = ["pynvml>=11"]\n'
    document = report(tmp_path, {"pyproject.toml": pyproject, "lib/__init__.py": "", "lib/core.py": "import torch\n"},
                      capsys)
    extra = [f for f in document["findings"] if f["path"] == "pyproject.toml"]
    assert extra and all("extra" in (f["guard"] or "") for f in extra)
    assert judged(document)["rocm"] == "runs" and judged(document)["mps"] == "runs"


def test_trap_the_same_dependency_in_the_base_install_still_counts(tmp_path, capsys):
    pyproject = PYPROJECT.replace('"lib"\n', '"lib"\ndependencies = ["pynvml>=11"]\n')
    document = report(tmp_path, {"pyproject.toml": pyproject, "lib/__init__.py": "", "lib/core.py": "import torch\n"},
                      capsys)
    assert judged(document)["rocm"] == "runs-degraded"


XLA_OPTIONAL = ("try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\n\n"
                "def device():\n    return xm.xla_device() if xm is not None else 'cpu'\n")


def test_an_optional_import_of_another_targets_package_loses_nothing_elsewhere(scan_source):
    result = scan_source({"lib/__init__.py": "", "lib/xla.py": XLA_OPTIONAL})
    (imported,) = [f for f in result.findings if f.rule == "LK104" and f.line == 2]
    assert imported.context == "optional"
    assert imported.targets["rocm"] == "works" and imported.targets["mps"] == "works"
    assert verdicts(result.findings)["rocm"].verdict == "runs"


def test_an_optional_fast_path_the_code_falls_back_from_is_reported_but_not_lost(scan_source):
    code = "try:\n    import apex\nexcept ImportError:\n    apex = None\n"
    result = scan_source({"lib/__init__.py": "", "lib/fast.py": code})
    found = [f for f in result.findings if f.path == "lib/fast.py"]
    # trap: unlike torch_xla's, the import still degrades where it is missing (the finding says so) ...
    assert found and found[0].context == "optional" and found[0].targets["mps"] == "degrades"
    assert found[0].guard == "fallback"
    # ... but the fallback is the path every other target runs: the verdict loses nothing
    assert verdicts(result.findings)["mps"].verdict == "runs"


def test_trap_a_guarded_cuda_path_skipped_on_an_accelerator_still_degrades_it(scan_source):
    code = "import torch\n\ndef step(x):\n    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n    return x\n"
    result = scan_source({"lib/__init__.py": "", "lib/step.py": code})
    assert verdicts(result.findings)["mps"].verdict == "runs-degraded"


# -- layout: sub-projects, device backends, callbacks -------------------------------------------------
KERNEL = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"


def test_a_subprojects_kernels_are_not_the_root_packages(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/core.py": "import torch\n",
             "fastkernels/setup.py": "from setuptools import setup\nsetup(name='fastkernels')\n",
             "fastkernels/csrc/k.cu": KERNEL, "csrc/own.cu": KERNEL}
    document = report(tmp_path, files, capsys)
    by_path = {f["path"]: f["component"] for f in document["findings"]}
    assert by_path["fastkernels/csrc/k.cu"] != "lib"  # another wheel's build compiles it
    assert by_path["csrc/own.cu"] == "lib"  # trap: the root's own native sources stay the package's


DEVICE_GPU = "import torch\n\n\nclass DeviceGPU:\n    def __init__(self):\n        torch.cuda.set_device(0)\n"


def test_a_gpu_module_among_device_siblings_is_their_cuda_backend(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/devices/__init__.py": "",
             "lib/devices/device_gpu.py": DEVICE_GPU, "lib/devices/device_cpu.py": "import torch\n",
             "lib/devices/device_mps.py": "import torch\n"}
    document = report(tmp_path, files, capsys)
    (found,) = [f for f in document["findings"] if f["path"] == "lib/devices/device_gpu.py"]
    assert found["context"] == "backend-module" and found["targets"]["mps"] == "works"
    assert judged(document)["mps"] == "runs" and judged(document)["cpu"] == "runs"


def test_trap_a_gpu_module_alone_is_the_main_path(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/devices/__init__.py": "",
             "lib/devices/device_gpu.py": DEVICE_GPU, "lib/devices/registry.py": "import torch\n"}
    document = report(tmp_path, files, capsys)
    (found,) = [f for f in document["findings"] if f["path"] == "lib/devices/device_gpu.py"]
    assert found["context"] is None and judged(document)["mps"] == "fails"


SNAPSHOT = "import torch\n\n\nclass MemorySnapshot:\n    def start(self):\n        torch.cuda.memory._record_memory_history()\n"


def test_a_module_in_a_callbacks_folder_is_a_plugin_the_run_adds(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/callbacks/__init__.py": "",
             "lib/callbacks/memory_snapshot.py": SNAPSHOT}
    document = report(tmp_path, files, capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/callbacks/memory_snapshot.py"]
    assert found and all(f["context"] == "feature" for f in found)
    assert "is in `lib/callbacks/`, a folder of callbacks a user adds to a run by name" in found[0]["message"]
    assert judged(document)["mps"] == "runs"


@pytest.mark.parametrize("path", [
    "callbacks/memory_snapshot.py",  # trap: a repository's top folder is a component, not a feature
    "lib/callbacks.py",  # trap: a module named for it, not a folder
])
def test_trap_no_callbacks_folder_below_the_top(path, tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", path: SNAPSHOT}
    document = report(tmp_path, files, capsys)
    found = [f for f in document["findings"] if f["path"] == path]
    assert found and all("feature" not in (f["context"] or "") for f in found), found
