"""An int where torch takes a device (int-device-index, LK107; issue 19 gap 1) rewritten to the
project's device at that index (F44): `.to(gpu_id)` -> `.to(device_at(gpu_id))`, DDP's
`device_ids=[i]` kept off the CPU. Each rewrite keeps what the int meant on an NVIDIA machine
(`device_at(i)` is `cuda:i` there, DDP gets the same indexes), every other use of the index stays
as it is, and the fixed code runs on the CPU-only torch of the test extra, where the int raised."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_fix_device_rewrites import AT, fixed

from auditor.config.settings import Settings
from auditor.pipeline.scan import scan

GET = "from device_choice import get_device\n"


def lk107(tmp_path) -> list:
    return [f for f in scan([str(tmp_path)], Settings(cache=False, torch_version="2.13")).findings if f.rule == "LK107"]


@pytest.mark.parametrize(("code", "rewritten", "imports"), [
    ("m = m.to(0)", "m = m.to(device_at(0))", AT),
    ("x = torch.zeros(3, device=0)", "x = torch.zeros(3, device=device_at(0))", AT),
    ("x = x.to(device=1, non_blocking=True)", "x = x.to(device=device_at(1), non_blocking=True)", AT),
    ("d = torch.device(1)", "d = device_at(1)", AT),
    ("def run(m, gpu_id: int):\n    return m.to(gpu_id)", "def run(m, gpu_id: int):\n    return m.to(device_at(gpu_id))", AT),
    ('rank = int(os.environ["LOCAL_RANK"])\nx = x.to(rank)', 'rank = int(os.environ["LOCAL_RANK"])\nx = x.to(device_at(rank))',
     AT),
    ("rank = dist.get_rank() % torch.cuda.device_count()\nd = torch.device(rank)",
     "rank = dist.get_rank() % torch.cuda.device_count()\nd = device_at(rank)", AT),
    ("device = 0  # shorthand for cuda:0\nm = m.to(device)", "device = 0  # shorthand for cuda:0\nm = m.to(device_at(device))", AT),
    # DDP: the same indexes off the CPU, none on it (a CPU module takes none)
    ("m = DDP(m, device_ids=[rank], output_device=rank)",
     'm = DDP(m, device_ids=[rank] if get_device().type != "cpu" else None, output_device=rank if get_device().type '
     '!= "cpu" else None)', GET),
])
def test_each_int_device_becomes_the_project_device_at_that_index(tmp_path, code, rewritten, imports):
    head = ("import os\nimport torch\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n")
    tail = "\nprint(os.sep, torch.ones(1), dist, DDP, rank)\n" if "rank" in code else "\nprint(os.sep, torch.ones(1), dist, DDP)\n"
    rank = "" if "rank = " in code or "rank" not in code else "rank = 0\n"
    after = fixed(tmp_path, head + rank + code + tail)  # safe fixes only: through the module audit creates
    assert after == head + imports + rank + rewritten + tail
    assert lk107(tmp_path) == []  # nothing left to report


def test_the_index_keeps_its_other_uses(tmp_path):
    """Only the device position changes: `rank == 0`, an f-string and arithmetic still see the int."""
    code = ('import os\nimport torch\n\nclass Trainer:\n    def __init__(self, model):\n'
            '        self.gpu_id = int(os.environ["LOCAL_RANK"])\n        self.model = model.to(self.gpu_id)\n\n'
            '    def log(self):\n        if self.gpu_id == 0:\n            print(f"[GPU{self.gpu_id}]", self.gpu_id + 1)\n')
    after = fixed(tmp_path, code)
    assert after == code.replace("import torch\n", "import torch\n" + AT).replace(
        "model.to(self.gpu_id)", "model.to(device_at(self.gpu_id))")


@pytest.mark.parametrize("code", [
    "import torch\nx = x.to(torch.float16)\ny = y.to(dtype)\nz = z.to(other)\nw = w.to(non_blocking=True)\n",
    "import torch\nd = torch.device('cpu', 0)\nfor i in range(4):\n    x = xs[0].to(device)\n",
    "import torch\ndevice = 0\nif cpu:\n    device = torch.device('cpu')\nm = m.to(device)\n",  # not only an int
    "import torch\nm = torch.nn.DataParallel(m, device_ids=[0, 1])\nm2 = DDP(m, device_ids=None)\n",
    "import torch\ns = torch.load(p, map_location=0)\n",  # an int map_location is a TypeError everywhere
    "import torch\n# m.to(0)\nprint('m.to(0)')\n",
])
def test_what_is_not_an_int_device_is_not_reported_nor_rewritten(tmp_path, code):
    assert fixed(tmp_path, code) == code
    assert lk107(tmp_path) == []


def test_an_int_device_evaluated_at_import_is_rewritten_only_with_unsafe_fixes(tmp_path):
    code = "import torch\n\ndef run(m, device=torch.device(0)):\n    return m.to(device)\n"
    assert fixed(tmp_path / "a", code) == code
    assert "def run(m, device=device_at(0)):" in fixed(tmp_path / "b", code, unsafe=True)


def test_a_guarded_int_device_is_reported_in_context_and_left(tmp_path):
    code = "import torch\nif torch.cuda.is_available():\n    m = m.to(0)\n"
    assert fixed(tmp_path, code) == code
    assert [f.context for f in lk107(tmp_path)] == ["guarded"]


def test_the_fixed_code_runs_on_the_cpu_where_the_int_raised(tmp_path):
    pytest.importorskip("torch")
    code = ("import torch\n\ndef build(gpu_id: int):\n    m = torch.nn.Linear(2, 2).to(gpu_id)\n"
            "    x = torch.ones(1, 2, device=gpu_id)\n    return m(x).sum().item(), torch.device(gpu_id).type\n\n"
            "print(build(0))\n")
    (tmp_path / "original").mkdir()
    (tmp_path / "original" / "train.py").write_text(code, encoding="utf-8")
    before = subprocess.run([sys.executable, "train.py"], cwd=tmp_path / "original", capture_output=True, text=True,
                            timeout=120)
    assert before.returncode != 0 and "Cannot access accelerator device when none is available" in before.stderr
    fixed(tmp_path / "fixed", code)
    after = subprocess.run([sys.executable, "train.py"], cwd=tmp_path / "fixed", capture_output=True, text=True,
                           timeout=120)
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip().endswith("'cpu')")
