"""Fixed programs run where the originals raised (issue 19, "execution, not only compilation").

Each program is run with the CPU-only PyTorch of the test extra: the original raises at its CUDA
tie, `--fix --unsafe-fixes` rewrites it, and the fixed program runs to the end and prints what a
hand-written CPU version prints (within the stated tolerance). A test's programs run in one
child process (torch is imported once), so the few tests here stay fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan

pytest.importorskip("torch")

# A training step of the usual shape: seeds for every device, a model and a batch moved with
# `.cuda()`, AMP's deprecated scaler, a synchronize before reading the loss.
TRAINING = """\
import torch
from torch.cuda.amp import GradScaler

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
model = torch.nn.Linear(4, 2).cuda()
x = torch.randn(8, 4).cuda()
scaler = GradScaler()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
torch.cuda.synchronize()
RESULT.append(loss.item())
"""

# The same computation written for the CPU by hand: the reference the fixed program must match.
TRAINING_CPU = """\
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
RESULT.append(loss.item())
"""

TOLERANCE = 1e-6  # the same float32 operations in the same order: equal up to rounding


# Runs each program in turn in one child process (torch is imported once): prints one JSON line,
# per program either {"result": <its RESULT value>} or {"error": "<exception type>: <message>"}.
DRIVER = """\
import json, runpy, sys, warnings
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    printed = []
    try:
        runpy.run_path(path, init_globals={"RESULT": printed}, run_name="__main__")
        print(json.dumps({"result": printed[-1]}))
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def run_programs(tmp_path, *names: str) -> list[dict]:
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), *(str(tmp_path / n) for n in names)],
                          capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin",
                                                                            "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_a_training_step_raises_on_cpu_torch_and_runs_once_fixed(tmp_path):
    (tmp_path / "original.py").write_text(TRAINING, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAINING, encoding="utf-8")
    (tmp_path / "reference.py").write_text(TRAINING_CPU, encoding="utf-8")
    settings = Settings(cache=False, jobs=1, torch_version="2.13")
    run = fix_paths(scan([str(tmp_path / "train.py")], settings), unsafe=True, write=True,
                    max_bytes=settings.max_bytes)
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert run.fixed_count >= 4 and ".cuda()" not in fixed and "torch.cuda." not in fixed, fixed

    original, after, reference = run_programs(tmp_path, "original.py", "train.py", "reference.py")
    assert "not compiled with CUDA" in original.get("error", "")  # the original raises at `.cuda()`
    assert "error" not in after and "error" not in reference, (after, reference)
    assert after["result"] == pytest.approx(reference["result"], abs=TOLERANCE)
