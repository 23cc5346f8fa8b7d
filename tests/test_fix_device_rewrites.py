"""The raising device ties rewritten to the project's one device choice (issue 19, items 2-3):
each rewrite keeps the value the program had on an NVIDIA machine, the places that do not choose
a device are left with a reason (traps), and once a file has no raising tie left the held-back
accelerator swaps apply in the same run. The last test runs a fixed training repository on the
CPU-only torch of the test extra, where the original raised."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec

import pytest

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.fix.clean import summarize
from auditor.fix.device_owner import project_name
from auditor.pipeline.runtime import catalogue_for
from auditor.pipeline.scan import scan

IMPORT = "from device_choice import get_device\n"
AT = "from device_choice import device_at\n"


def fixed(tmp_path, code: str, unsafe: bool = False, name: str = "train.py", **settings) -> str:
    """`code` as `audit --fix` leaves it (a script-only repository: device_choice.py is created beside it);
    a second run must change nothing."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code, encoding="utf-8")
    options = Settings(cache=False, torch_version="2.13", jobs=1, **settings)
    run = fix_paths(scan([str(tmp_path)], options), unsafe, True, options.max_bytes)
    assert not run.errors, run.errors
    after = path.read_text(encoding="utf-8")
    compile(after, str(path), "exec", dont_inherit=True)
    again = fix_paths(scan([str(tmp_path)], options), unsafe, True, options.max_bytes)
    assert again.changed == [] and again.created == [], "a second --fix run changed something"
    return after


@pytest.mark.parametrize(("line", "rewritten", "imports"), [
    ('d = torch.device("cuda")', "d = get_device()", IMPORT),
    ('d = torch.device("cuda:1")', "d = device_at(1)", AT),
    ('d = torch.device("cuda", rank)', "d = device_at(rank)", AT),
    # built from a value that may be a string (os.environ["LOCAL_RANK"]): the index goes through int()
    ('d = torch.device(f"cuda:{local_rank}")', "d = device_at(int(local_rank))", AT),
    ('d = torch.device("cuda:%d" % rank)', "d = device_at(int(rank))", AT),
    ('d = torch.device("cuda:" + str(os.environ["LOCAL_RANK"]))', 'd = device_at(int(os.environ["LOCAL_RANK"]))', AT),
    ('m = m.to("cuda")', "m = m.to(get_device())", IMPORT),
    ('x = x.to("cuda:0", non_blocking=True)', "x = x.to(device_at(0), non_blocking=True)", AT),
    ('x = torch.zeros(3, device="cuda")', "x = torch.zeros(3, device=get_device())", IMPORT),
    ('s = torch.load(p, map_location="cuda:0")', "s = torch.load(p, map_location=device_at(0))", AT),
    # not a torch API, or stored: the same string on NVIDIA ("cuda", "cuda:0"), which string comparisons still see
    ('m = AutoModel.from_pretrained(n, device_map="cuda")', "m = AutoModel.from_pretrained(n, device_map=get_device().type)",
     IMPORT),
    ('device = "cuda"', "device = get_device().type", IMPORT),
    ('device = "cuda:0"', "device = str(device_at(0))", AT),
    ('device = f"cuda:{rank}"', "device = str(device_at(int(rank)))", AT),
    ('run(model, device="cuda")', "run(model, device=get_device().type)", IMPORT),
])
def test_each_device_value_becomes_the_project_device(tmp_path, line, rewritten, imports):
    after = fixed(tmp_path, f"import torch\n{line}\nprint(torch.ones(1))\n")
    assert after == f"import torch\n{imports}{rewritten}\nprint(torch.ones(1))\n"


@pytest.mark.parametrize("code", [
    'import torch\nx = torch.ones(1, device=f"cuda:{i:02d}")\n',  # a format spec: not read as an index
    'import torch\nassert x.device.type == "cuda", "needs CUDA"\n',  # a stated requirement (pattern 11)
    'import torch\nif x.device.type != "cuda":\n    raise ValueError("CUDA only")\n',
    'import argparse\np = argparse.ArgumentParser()\np.add_argument("--device", default="cuda", choices=["cuda", "cpu"])\n',
    'import torch\nm = AutoModel.from_pretrained(n, device_map={"": "cuda:0"})\n',  # a device map dict stays
    'import torch\nloader = make_loader(ds, pin_memory_device="cuda:1")\n',
    'import torch\nd = torch.device("cuda:%d" % (rank,))\n',  # built in a way the rewrite does not read
])
def test_what_does_not_choose_a_device_is_left_with_a_reason(tmp_path, code):
    assert fixed(tmp_path, code) == code
    result = scan([str(tmp_path)], Settings(cache=False, torch_version="2.13"))
    assert not (tmp_path / "device_choice.py").exists()
    assert result.findings  # still reported


def test_a_parameter_default_is_rewritten_only_with_unsafe_fixes(tmp_path):
    """Evaluated when the module is imported: the rewrite would probe the device at import time (so
    would a class attribute, or a package module's top level; a script's top level is the program)."""
    code = ("import torch\n\ndef load(path, device=torch.device('cuda')):\n    return path\n\n"
            "def run(m, device='cuda'):\n    return m.to(device)\n")
    assert fixed(tmp_path / "a", code) == code
    after = fixed(tmp_path / "b", code, unsafe=True)
    assert "def load(path, device=get_device()):" in after and "def run(m, device=get_device().type):" in after
    top = "import torch\nDEVICE = torch.device('cuda')\n"
    (tmp_path / "c" / "pkg").mkdir(parents=True)
    (tmp_path / "c" / "pkg" / "__init__.py").write_text("")
    assert fixed(tmp_path / "c", top, name="pkg/consts.py") == top  # a package module's top level
    assert fixed(tmp_path / "d", top) == "from device_choice import get_device\nDEVICE = get_device()\n"  # a script


def test_a_file_that_already_chooses_per_backend_and_a_cuda_method_keep_their_cuda(tmp_path):
    """bitsandbytes' Int8Params: `def cuda(...)` beside `def xpu(...)`, each sending to its own device."""
    layered = ('import torch\n\nclass P(torch.nn.Parameter):\n    def cuda(self, device=None):\n'
               '        return self.to(device="cuda" if device is None else device)\n\n'
               '    def xpu(self, device=None):\n        return self.to(device="xpu" if device is None else device)\n')
    assert fixed(tmp_path / "a", layered, unsafe=True) == layered
    method = ('import torch\n\nclass P(torch.nn.Parameter):\n    def cuda(self, device=None):\n'
              '        return self.to(device="cuda" if device is None else device)\n')
    assert fixed(tmp_path / "b", method, unsafe=True) == method


def test_a_class_with_its_own_to_gets_the_device_string(tmp_path):
    after = fixed(tmp_path, 'import torch\n\nclass Batch:\n    def to(self, device):\n        return device.upper()\n\n'
                            'b = Batch().to("cuda")\n')
    assert 'b = Batch().to(get_device().type)' in after  # "cuda" on NVIDIA, a string as before


def test_cuda_with_an_index_keeps_the_index_and_a_device_object_argument_is_held(tmp_path):
    after = fixed(tmp_path, "import torch\nx = x.cuda(local_rank)\ny = y.cuda(device=1, non_blocking=True)\n"
                            "gpu = torch.device('cuda', 1)\nz = z.cuda(gpu)\n")
    assert "x = x.to(device_at(local_rank))\ny = y.to(device_at(1), non_blocking=True)\n" in after
    assert "z = z.cuda(gpu)" in after and "gpu = device_at(1)" in after


def test_test_code_is_rewritten_only_with_fix_tests(tmp_path):
    code = "import torch\n\ndef test_it():\n    x = torch.ones(1).cuda()\n"
    assert fixed(tmp_path, code, name="test_model.py") == code
    assert fixed(tmp_path, code, name="test_model.py", fix_tests=True) == (
        "import torch\nfrom device_choice import get_device\n\ndef test_it():\n    x = torch.ones(1).to(get_device())\n")


def test_a_guarded_cuda_branch_and_a_dispatch_layers_cuda_module_stay(tmp_path):
    guarded = "import torch\nif torch.cuda.is_available():\n    m = m.cuda()\n"
    assert fixed(tmp_path / "a", guarded) == guarded
    layer = {"backends/__init__.py": "", "backends/cuda.py": "import torch\nx = torch.ones(1).cuda()\n",
             "backends/xpu.py": "import torch\nx = torch.ones(1).xpu()\n", "backends/cpu.py": "x = 1\n"}
    for name, text in layer.items():
        (tmp_path / "b" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "b" / name).write_text(text)
    assert fixed(tmp_path / "b", layer["backends/cuda.py"], name="backends/cuda.py") == layer["backends/cuda.py"]


# -- item 3: the gate opens once the file is CUDA-clean -----------------------------------------------
TRAIN = """\
import torch

from pkg.model import build

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = build()
x = torch.randn(8, 4).cuda(non_blocking=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"{loss.item():.6f}")
"""
MODEL = "import torch\n\n\ndef build():\n    return torch.nn.Linear(4, 2).cuda()\n"
CPU_REFERENCE = """\
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
x = torch.randn(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
print(f"{loss.item():.6f}")
"""


def training_repo(root):
    for name, text in {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/model.py": MODEL,
                       "requirements.txt": "torch>=2.6\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_a_training_repository_becomes_cuda_clean_and_its_gated_swaps_apply(tmp_path):
    training_repo(tmp_path)
    options = Settings(cache=False, jobs=1)
    before = scan([str(tmp_path)], options)
    run = fix_paths(before, True, True, options.max_bytes)
    # a script repository (no packaging file): the module goes beside train.py; pkg/ reaches it from there
    assert not run.errors and [c.path for c in run.created] == ["device_choice.py"]
    assert "torch.accelerator.is_available()" in (tmp_path / "device_choice.py").read_text()  # floor 2.6
    train = (tmp_path / "train.py").read_text()
    assert "from device_choice import get_device" in train and "device = get_device()\n" in train
    assert ".to(get_device(), non_blocking=True)" in train
    assert "torch.accelerator.synchronize()" in train  # held back before: the file is CUDA-clean now
    assert "return torch.nn.Linear(4, 2).to(get_device())" in (tmp_path / "pkg" / "model.py").read_text()
    summary = summarize(before, run, catalogue_for(options), True, True)
    files = {f.path: f for f in summary.files}
    assert files["train.py"].made_clean and dict(files["train.py"].fixed)["LK102"] == 1
    assert files["pkg/model.py"].made_clean and not files["pkg/model.py"].blockers
    again = fix_paths(scan([str(tmp_path)], options), True, True, options.max_bytes)
    assert again.changed == [] and again.created == []


def test_the_safe_run_alone_rewrites_the_ties_and_holds_the_gated_swaps(tmp_path):
    training_repo(tmp_path)
    options = Settings(cache=False, jobs=1)
    run = fix_paths(scan([str(tmp_path)], options), False, True, options.max_bytes)
    train = (tmp_path / "train.py").read_text()
    assert ".cuda(" not in train and "torch.cuda.synchronize()" in train  # unsafe swaps need --unsafe-fixes
    assert sum(run.files[0].applied.values()) + sum(run.files[1].applied.values()) == 3


@pytest.mark.slow
@pytest.mark.skipif(find_spec("torch") is None, reason="needs the CPU torch of the test extra")
def test_the_fixed_training_repository_runs_on_cpu_torch_where_the_original_raised(tmp_path):
    training_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop(f"{project_name(str(tmp_path))}_DEVICE", None)  # no override: the device choice decides

    def run(script: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    original = run(TRAIN)
    assert original.returncode != 0 and "Torch not compiled with CUDA enabled" in original.stderr
    assert 'line 5, in build' in original.stderr  # the first tie: `.cuda()` in pkg/model.py
    fix_paths(scan([str(tmp_path)], Settings(cache=False, jobs=1)), True, True, 10**7)
    done = run((tmp_path / "train.py").read_text())
    reference = run(CPU_REFERENCE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert abs(float(done.stdout.split()[-1]) - float(reference.stdout.split()[-1])) <= 1e-6  # same ops, same order


def test_a_tie_guarded_by_a_device_check_does_not_hold_the_swaps_one_guarded_by_availability_does(tmp_path):
    """No swap touches `'cuda' in device`, so the CUDA branch behind it keeps running only on CUDA; a
    `torch.cuda.is_available()` guard is the very check a gated swap turns into an accelerator check."""
    device_guard = ("import torch\ndevice = 'cpu'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
                    "torch.cuda.synchronize()\n")
    assert "torch.accelerator.synchronize()" in fixed(tmp_path / "a", device_guard, unsafe=True)
    availability = ("import torch\nx = torch.ones(1).cuda()\nif torch.cuda.is_available():\n    m = m.cuda()\n"
                    "torch.cuda.synchronize()\n")
    after = fixed(tmp_path / "b", availability, unsafe=True)
    assert "x = torch.ones(1).to(get_device())" in after and "torch.cuda.synchronize()" in after
    assert "    m = m.cuda()" in after  # the guarded branch stays CUDA's, and holds the swaps back


def test_where_the_project_device_is_out_of_reach_cuda_gets_the_accelerator_swap_as_before(tmp_path):
    """An Accelerator owns the device (nothing is created): `.cuda()` keeps F23, the gated swap main had."""
    (tmp_path / "acc.py").write_text("from accelerate import Accelerator\naccelerator = Accelerator()\n")
    after = fixed(tmp_path, "import torch\nm = M().cuda()\n", unsafe=True)
    assert after == "import torch\nm = M().to(torch.accelerator.current_accelerator())\n"
    assert not (tmp_path / "device_choice.py").exists()
