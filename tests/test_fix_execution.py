"""Fixed programs run where the originals raised (issue 19, "execution, not only compilation").

Each program (tests/execution_programs.py: the shapes real repositories have) is run with the
CPU-only PyTorch of the test extra: the original stops at its CUDA tie (the exception and the
line are asserted), `audit --fix` (`--unsafe-fixes` where the program says so) rewrites it, and
the fixed program runs to the end and reports what a hand-written CPU version reports, within
the program's stated tolerance. Each program costs a few interpreter start-ups with torch: slow."""

from __future__ import annotations

import pytest
from execution_programs import INFERENCE_WEIGHTS, PROGRAMS, REQUIREMENTS, Program, notebook
from execution_runner import run_program

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan

pytest.importorskip("torch")


def write_project(folder, program: Program) -> None:
    """The program in a project of its own (the floor in requirements.txt), with the files it reads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    source = notebook(program.source) if program.name.endswith(".ipynb") else program.source
    (folder / program.name).write_text(source, encoding="utf-8")
    (folder / "make_weights.py").write_text(INFERENCE_WEIGHTS, encoding="utf-8")
    assert "error" not in run_program(folder / "make_weights.py")


def fix(folder, unsafe: bool):
    settings = Settings(cache=False, jobs=1)
    return fix_paths(scan([str(folder)], settings), unsafe=unsafe, write=True, max_bytes=settings.max_bytes)


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_the_original_raises_at_its_tie_and_the_fixed_program_matches_a_cpu_reference(tmp_path, program):
    write_project(tmp_path / "original", program)
    write_project(tmp_path / "fixed", program)
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "reference.py").write_text(program.reference, encoding="utf-8")
    (tmp_path / "reference" / "make_weights.py").write_text(INFERENCE_WEIGHTS, encoding="utf-8")
    run_program(tmp_path / "reference" / "make_weights.py")

    original = run_program(tmp_path / "original" / program.name, program.processes)
    assert original.get("error", "").startswith(program.raises + ":"), original
    assert (original.get("cell"), original.get("line")) == (program.cell, program.line), original

    run = fix(tmp_path / "fixed", program.unsafe)
    assert run.fixed_count > 0 and not [f.error for f in run.files if f.error], run.files
    fixed_text = (tmp_path / "fixed" / program.name).read_text(encoding="utf-8")
    after = run_program(tmp_path / "fixed" / program.name, program.processes)
    reference = run_program(tmp_path / "reference" / "reference.py", program.processes)
    assert "error" not in reference, reference
    assert "error" not in after, (after, fixed_text)
    assert after["result"] == pytest.approx(reference["result"], abs=program.tolerance), fixed_text
    assert fix(tmp_path / "fixed", program.unsafe).fixed_count == 0  # a second run changes nothing


# The classic shape with the deprecated AMP spelling and a seed for every CUDA device.
TRAINING = Program("train.py", """\
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
""", """\
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
""", "AssertionError", 6, unsafe=True, tolerance=1e-6)


def test_a_training_step_raises_on_cpu_torch_and_runs_once_fixed(tmp_path):
    """The quick one (not slow): one program, every deprecated CUDA spelling of it rewritten."""
    write_project(tmp_path, TRAINING)
    (tmp_path / "reference.py").write_text(TRAINING.reference, encoding="utf-8")
    original = run_program(tmp_path / "train.py")
    assert original.get("error", "").startswith("AssertionError: Torch not compiled with CUDA") and \
        original["line"] == TRAINING.line, original
    run = fix(tmp_path, unsafe=True)
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert run.fixed_count >= 4 and ".cuda()" not in fixed and "torch.cuda." not in fixed, fixed
    after, reference = run_program(tmp_path / "train.py"), run_program(tmp_path / "reference.py")
    assert "error" not in after and "error" not in reference, (after, reference)
    assert after["result"] == pytest.approx(reference["result"], abs=TRAINING.tolerance)
