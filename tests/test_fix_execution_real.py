"""Real public scripts (fixtures/real-scripts, pinned with their licences) fixed and run on the
CPU-only PyTorch of the test extra (issue 19): each stops at its CUDA tie as published (the
exception and the line are asserted), `audit --fix --unsafe-fixes` rewrites a copy, and the copy
runs to the end with the result of a CPU version: the script's own CPU option where it has one,
else a copy edited by hand for the CPU (the edits are listed below, each must apply once).
Synthetic data replaces downloads. Several torch start-ups each: slow."""

from __future__ import annotations

import pickle
import shutil

import pytest
from execution_runner import run_program

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan

pytest.importorskip("torch")

REAL = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "real-scripts"
REQUIREMENTS = "torch>=2.8\n"
SAME_OPERATIONS = 1e-6


def copy_script(name: str, folder):
    shutil.copytree(REAL / name, folder, ignore=shutil.ignore_patterns("LICENSE"))
    (folder / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    return folder


def by_hand(folder, script: str, edits: list[tuple[str, str]]) -> None:
    """The CPU version written by hand: each (old, new) edit applies exactly once."""
    path = folder / script
    text = path.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def fix(folder) -> int:
    settings = Settings(cache=False, jobs=1)
    run = fix_paths(scan([str(folder)], settings), unsafe=True, write=True, max_bytes=settings.max_bytes)
    assert not [f.error for f in run.files if f.error]
    return run.fixed_count


# -- pytorch/examples: DDP with torchrun ----------------------------------------------------------------
SNAPSHOT_SUM = """\
import torch
snapshot = torch.load("snapshot.pt")
RESULT.append([snapshot["EPOCHS_RUN"], round(sum(v.sum().item() for v in snapshot["MODEL_STATE"].values()), 6)])
"""
TORCHRUN_CPU = [  # the tutorial's script as one would write it for the CPU
    ('    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n', ""),
    ('init_process_group(backend="nccl")', 'init_process_group(backend="gloo")'),
    ("self.model = model.to(self.gpu_id)", "self.model = model"),
    ("DDP(self.model, device_ids=[self.gpu_id])", "DDP(self.model)"),
    ('loc = f"cuda:{self.gpu_id}"', 'loc = "cpu"'),
    ("source = source.to(self.gpu_id)", "source = source"),
    ("targets = targets.to(self.gpu_id)", "targets = targets"),
]


@pytest.mark.slow
def test_pytorch_examples_ddp_torchrun_runs_on_two_cpu_ranks_once_fixed(tmp_path):
    original = copy_script("ddp-torchrun", tmp_path / "original")
    report = run_program(original / "multigpu_torchrun.py", 2, ("2", "1"), seed=0)
    assert report.get("error", "").startswith("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'")
    assert report["line"] == 14, report  # torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

    reference = copy_script("ddp-torchrun", tmp_path / "reference")
    by_hand(reference, "multigpu_torchrun.py", TORCHRUN_CPU)
    fixed = copy_script("ddp-torchrun", tmp_path / "fixed")
    assert fix(fixed) > 0
    for folder in (reference, fixed):
        done = run_program(folder / "multigpu_torchrun.py", 2, ("2", "1"), seed=0)
        assert "error" not in done, (done, (folder / "multigpu_torchrun.py").read_text(encoding="utf-8"))
        (folder / "result.py").write_text(SNAPSHOT_SUM, encoding="utf-8")
    expected = run_program(reference / "result.py")["result"]
    assert run_program(fixed / "result.py")["result"] == pytest.approx(expected, abs=SAME_OPERATIONS)


# -- pytorch/examples: the single-GPU starting point of the same tutorial --------------------------------
CHECKPOINT_SUM = """\
import torch
RESULT.append(round(sum(v.sum().item() for v in torch.load("checkpoint.pt").values()), 6))
"""


@pytest.mark.slow
def test_pytorch_examples_single_gpu_runs_on_the_cpu_once_fixed(tmp_path):
    original = copy_script("ddp-single-gpu", tmp_path / "original")
    report = run_program(original / "single_gpu.py", 1, ("1", "1"), seed=0)
    assert report.get("error", "").startswith("RuntimeError: Cannot access accelerator device when none"), report
    assert report["line"] == 17, report  # self.model = model.to(gpu_id)

    reference = copy_script("ddp-single-gpu", tmp_path / "reference")
    by_hand(reference, "single_gpu.py", [("    device = 0  # shorthand for cuda:0", '    device = "cpu"')])
    fixed = copy_script("ddp-single-gpu", tmp_path / "fixed")
    assert fix(fixed) > 0
    for folder in (reference, fixed):
        done = run_program(folder / "single_gpu.py", 1, ("1", "1"), seed=0)
        assert "error" not in done, done
        (folder / "result.py").write_text(CHECKPOINT_SUM, encoding="utf-8")
    expected = run_program(reference / "result.py")["result"]
    assert run_program(fixed / "result.py")["result"] == pytest.approx(expected, abs=SAME_OPERATIONS)


# -- karpathy/nanoGPT: sampling from a checkpoint ----------------------------------------------------------
ALPHABET = "\n abcdefghijklmnopqrstuvwxyz.,"
CHECKPOINT = f"""\
import os, pickle, torch
from model import GPT, GPTConfig
torch.manual_seed(5)
args = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, bias=False, vocab_size={len(ALPHABET)}, dropout=0.0)
os.makedirs("out", exist_ok=True)
torch.save({{"model_args": args, "model": GPT(GPTConfig(**args)).state_dict(), "config": {{"dataset": "chars"}}}},
           "out/ckpt.pt")
"""
SAMPLE_ARGS = ("--num_samples=2", "--max_new_tokens=40")


def nanogpt(folder):
    copy_script("nanogpt-sample", folder)
    # sample.py imports tiktoken unconditionally but uses it only without a meta.pkl: an empty stand-in
    (folder / "tiktoken.py").write_text("", encoding="utf-8")
    (folder / "make_checkpoint.py").write_text(CHECKPOINT, encoding="utf-8")
    assert "error" not in run_program(folder / "make_checkpoint.py")
    (folder / "data" / "chars").mkdir(parents=True)
    meta = {"stoi": {c: i for i, c in enumerate(ALPHABET)}, "itos": dict(enumerate(ALPHABET))}
    (folder / "data" / "chars" / "meta.pkl").write_bytes(pickle.dumps(meta))
    return folder


@pytest.mark.slow
def test_nanogpt_sample_generates_on_the_cpu_once_fixed(tmp_path):
    original = nanogpt(tmp_path / "original")
    report = run_program(original / "sample.py", 1, SAMPLE_ARGS)
    assert report.get("error", "").startswith("RuntimeError: Attempting to deserialize object on a CUDA device"), report
    assert report["line"] == 38, report  # checkpoint = torch.load(ckpt_path, map_location=device)

    expected = run_program(original / "sample.py", 1, (*SAMPLE_ARGS, "--device=cpu"))  # the script's own CPU option
    assert "error" not in expected and len(expected["stdout"]) > 4, expected
    fixed = nanogpt(tmp_path / "fixed")
    assert fix(fixed) > 0
    done = run_program(fixed / "sample.py", 1, SAMPLE_ARGS)
    assert "error" not in done, (done, (fixed / "sample.py").read_text(encoding="utf-8"))
    printed = [line for line in expected["stdout"] if line != "Overriding: device = cpu"]
    assert done["stdout"] == printed  # the same text sampled: the same device, dtype and seed
