"""Programs of the shapes real repositories have, for tests/test_fix_execution.py (issue 19).

Each `Program` is a CUDA program as it is written for an NVIDIA machine, the exception and the
line where it stops on a CPU-only PyTorch, and a CPU version of the same computation written by
hand: `audit --fix` must turn the first into a program that runs to the end there and prints
what the hand-written one prints. A program reports its result by appending it to `RESULT` (a
list the runner passes in); a notebook is run cell by cell as Jupyter would, in one namespace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    name: str  # the file name (`.py`, or `.ipynb` for a notebook)
    source: str  # the CUDA program (a notebook: its cells, separated by CELL)
    reference: str  # the same computation written for the CPU by hand
    raises: str  # the exception type the original stops with on CPU-only torch ...
    line: int  # ... and the line of the program it stops at (in a notebook: the line in its cell)
    unsafe: bool  # whether `--unsafe-fixes` is needed (the default `--fix` leaves a raising tie)
    tolerance: float  # how far the fixed program's result may be from the reference's
    processes: int = 1  # run as this many ranks of a torchrun-style launch (RANK, WORLD_SIZE, ...)
    cell: int | None = None  # a notebook: the 1-based cell the original stops in


CELL = "\n# %% next cell\n"
REQUIREMENTS = "torch>=2.8\n"  # every program's project declares this floor (requirements.txt)
SAME_OPERATIONS = 1e-6  # the same float32 operations in the same order: equal up to rounding


def notebook(cells: str) -> str:
    """An nbformat 4 notebook of these code cells, as Jupyter writes it."""
    sources = [cell.strip("\n") for cell in cells.split(CELL)]
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                   "source": [line + "\n" for line in text.split("\n")[:-1]] + [text.split("\n")[-1]]}
                  for i, text in enumerate(sources)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


# A training loop with AMP: device-typed autocast and scaler, the model and batches moved with
# `.cuda()`, the loss read after a synchronize.
AMP_TRAINING = Program("train_amp.py", """\
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda")
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(5)]
for x, y in data:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
torch.cuda.synchronize()
RESULT.append(round(loss.item(), 6))
""", """\
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu")
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(5)]
for x, y in data:
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
RESULT.append(round(loss.item(), 6))
""", "AssertionError", 4, unsafe=True, tolerance=SAME_OPERATIONS)

# An inference script: a checkpoint loaded onto the GPU, the model and the input moved there.
INFERENCE = Program("infer.py", """\
import torch

model = torch.nn.Linear(4, 3)
state = torch.load("weights.pt", map_location="cuda")
model.load_state_dict(state)
model = model.cuda().eval()
with torch.no_grad():
    out = model(torch.arange(8.0).view(2, 4).to("cuda:0"))
RESULT.append(out.sum().item())
""", """\
import torch

model = torch.nn.Linear(4, 3)
model.load_state_dict(torch.load("weights.pt", map_location="cpu"))
model.eval()
with torch.no_grad():
    out = model(torch.arange(8.0).view(2, 4))
RESULT.append(out.sum().item())
""", "RuntimeError", 4, unsafe=False, tolerance=SAME_OPERATIONS)

# Writes the checkpoint the inference script loads (run before both).
INFERENCE_WEIGHTS = """\
import torch

torch.manual_seed(3)
torch.save(torch.nn.Linear(4, 3).state_dict(), "weights.pt")
"""

# A DDP script as torchrun starts it on each rank: the rank's device chosen by index, NCCL, the
# model on the device; every rank prints the same averaged parameters.
DDP = Program("ddp_train.py", """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group(backend="nccl")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(4, 1).cuda())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(100 + dist.get_rank())
x = torch.randn(8, 4).cuda()
for _ in range(3):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
RESULT.append(round(sum(p.sum().item() for p in model.parameters()), 6))
dist.destroy_process_group()
""", """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group(backend="gloo")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(100 + dist.get_rank())
x = torch.randn(8, 4)
for _ in range(3):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
RESULT.append(round(sum(p.sum().item() for p in model.parameters()), 6))
dist.destroy_process_group()
""", "AttributeError", 8, unsafe=True, tolerance=SAME_OPERATIONS, processes=2)

# A notebook: the device in a variable of the first cell, used in the cells after it.
NOTEBOOK = Program("explore.ipynb", CELL.join([
    'import torch\n\ndevice = "cuda"\ntorch.manual_seed(1)\n',
    "weights = torch.randn(3, 3).to(device)\nbias = torch.zeros(3, device=device)\n",
    "out = torch.relu(weights @ weights.T + bias)\ntorch.cuda.synchronize()\nRESULT.append(out.sum().item())\n",
]), """\
import torch

torch.manual_seed(1)
weights = torch.randn(3, 3)
bias = torch.zeros(3)
out = torch.relu(weights @ weights.T + bias)
RESULT.append(out.sum().item())
""", "AssertionError", 1, unsafe=True, tolerance=SAME_OPERATIONS, cell=2)

# A script that seeds every device (the seed helper of most training repositories), then draws
# random numbers on the GPU.
SEEDED = Program("seeded.py", """\
import random

import torch


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True


seed_everything(42)
noise = torch.rand(5, device="cuda:0")
RESULT.append(round(noise.sum().item() + random.random(), 6))
""", """\
import random

import torch

random.seed(42)
torch.manual_seed(42)
noise = torch.rand(5)
RESULT.append(round(noise.sum().item() + random.random(), 6))
""", "AssertionError", 15, unsafe=False, tolerance=SAME_OPERATIONS)

# A data loader with pinned memory feeding batches moved with `.cuda(non_blocking=True)`.
PINNED_LOADER = Program("loader.py", """\
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.arange(24.0).view(12, 2), torch.arange(12))
loader = DataLoader(dataset, batch_size=4, shuffle=False, pin_memory=True)
total = torch.zeros(2).cuda()
for features, labels in loader:
    features = features.cuda(non_blocking=True)
    total += features.sum(0) * labels.cuda().float().mean()
RESULT.append(total.tolist())
""", """\
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.arange(24.0).view(12, 2), torch.arange(12))
loader = DataLoader(dataset, batch_size=4, shuffle=False)
total = torch.zeros(2)
for features, labels in loader:
    total += features.sum(0) * labels.float().mean()
RESULT.append(total.tolist())
""", "AssertionError", 6, unsafe=True, tolerance=SAME_OPERATIONS)

# Work placed on one GPU of several by index (`with torch.cuda.device(i):`), the GPU in use printed.
ON_ONE_GPU = Program("one_gpu.py", """\
import os

import torch

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.manual_seed(0)
with torch.cuda.device(local_rank):
    layer = torch.nn.Linear(4, 2)
    out = layer(torch.randn(3, 4))
print(f"ran on GPU {torch.cuda.current_device()}")
RESULT.append(round(out.sum().item(), 6))
""", """\
import torch

torch.manual_seed(0)
layer = torch.nn.Linear(4, 2)
out = layer(torch.randn(3, 4))
RESULT.append(round(out.sum().item(), 6))
""", "RuntimeError", 7, unsafe=True, tolerance=SAME_OPERATIONS)

PROGRAMS = (AMP_TRAINING, INFERENCE, DDP, NOTEBOOK, SEEDED, PINNED_LOADER, ON_ONE_GPU)
