from __future__ import annotations

import re

from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import FileContext
from auditor.model import Category, Severity
from auditor.readers.document import Command, Word, read_document

_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
# Commands that start another one (`srun torchrun ...`, `mpirun -np 8 python -m torch.distributed.run`).
_STARTERS = frozenset({"srun", "mpirun", "mpiexec", "#sbatch", "salloc"})
_LAUNCHERS = frozenset({"torchrun", "deepspeed", "accelerate"})  # what a starter may run


def launches(command: Command) -> list[tuple[str, list[Word]]]:
    """The command itself, and the launcher a starter runs (`srun torchrun ...`), as program_and_args."""
    found = [program_and_args(command.words)]
    if found[0][0] in _STARTERS:
        for index, word in enumerate(command.words[1:], 1):
            name = word.text.rsplit("/", 1)[-1]
            if name in _LAUNCHERS or (_PYTHON.fullmatch(name) and "-m" in command.argv[index:index + 2]):
                found.append(program_and_args(command.words[index:]))
                break
    return found


def program_and_args(words: list[Word]) -> tuple[str, list[Word]]:
    """`torchrun ...` -> ("torchrun", args); `python -m torch.distributed.run ...` -> ("torch.distributed.run",
    args); `accelerate launch ...` -> ("accelerate", args after `launch`); `#SBATCH ...` -> ("#sbatch", args)."""
    program = words[0].text.rsplit("/", 1)[-1].lower()
    if _PYTHON.fullmatch(program):
        for index in range(1, len(words) - 1):
            if words[index].text == "-m":
                return words[index + 1].text, words[index + 2:]
        return program, words[1:]
    if program == "accelerate" and len(words) > 1 and words[1].text == "launch":
        return program, words[2:]
    return program, words[1:]


class GpuLauncherFlag(Rule):
    subject = "`{flag}`"
    fields = frozenset({"flag", "why", "instead"})
    code = "LK306"
    name = "gpu-launcher-flag"
    category = Category.DISTRIBUTED
    severity = Severity.MINOR
    message = "`{flag}`: {why}."
    suggestion = "Use {instead}."
    file_kinds = frozenset({"shell", "dockerfile", "notebook"})
    what = ("Finds launcher and scheduler options that count or request NVIDIA GPUs, in shell and Slurm scripts, "
            "Dockerfile `RUN`/`CMD`/`ENTRYPOINT` lines and notebook `!` lines: `torchrun --nproc_per_node=gpu` "
            "(one process per CUDA device), `accelerate launch --fp8_backend te|msamp` (NVIDIA FP8 libraries), Slurm "
            "`--gres=gpu` and `--gpus*` (`#SBATCH` lines included, and `srun torchrun ...`). Device-neutral spellings "
            "are not findings: `deepspeed --num_gpus` (an alias of `--num_accelerators`), `accelerate launch "
            "--multi_gpu` / `--gpu_ids` (mapped to each vendor's device). The table is `[[launcher]]` in "
            "rules/images.toml.")
    why = ("These options resolve through CUDA device counting or the MULTI_GPU/NCCL code path, or ask the scheduler "
           "for GPUs that TPU, Trainium and CPU partitions do not have: the job never starts, or starts one process "
           "per CUDA device that does not exist.")
    instead = ("Let the launcher count accelerators (`torchrun --nproc_per_node=auto`), keep one launch template per "
               "target, and choose the device in code with `torch.accelerator`.")

    VALID = [
        Valid("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n", path="train.sh"),
        Valid("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --cpus-per-task=8\n# srun --gres=gpu:4 x\n"
              "echo \"use --gres=gpu:4\"\n", path="job.slurm"),
        Valid("#!/bin/bash\naccelerate launch --num_processes 2 train.py\ndeepspeed --num_accelerators 4 t.py\n",
              path="launch.sh"),
        # Device-neutral despite their names (DeepSpeed 0.19, accelerate 1.15).
        Valid("#!/bin/bash\ndeepspeed --num_gpus 8 train.py\naccelerate launch --multi_gpu --gpu_ids 0,1 t.py\n"
              "accelerate launch --fp8_backend ao t.py\n", path="launch.sh"),
    ]
    INVALID = [
        Invalid("#!/bin/bash\n#SBATCH --job-name=x\n#SBATCH --gres=gpu:4\nsrun python train.py\n", path="job.sbatch",
                line=3),
        Invalid("#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=gpu train.py\n", path="run.sh",
                line=2),
        Invalid("#!/bin/bash\npython -m torch.distributed.run --nproc-per-node gpu train.py\n", path="run.sh", line=2),
        Invalid("#!/bin/bash\naccelerate launch \\\n  --mixed_precision fp8 \\\n  --fp8_backend te \\\n  train.py\n",
                path="a.sh", line=4),
        Invalid("#!/bin/bash\nsrun --ntasks-per-node=1 torchrun --nproc_per_node gpu train.py\n", path="job.sh", line=2),
        Invalid('FROM python:3.11\nCMD ["torchrun", "--nproc_per_node=gpu", "serve.py"]\n', path="Dockerfile", line=2),
    ]

    def check_file(self, ctx: FileContext) -> None:
        rows = ctx.catalogue.table("images").get("launcher", [])
        for command in read_document(ctx).commands:
            for program, args in launches(command):
                for row in rows:
                    if program.lower() in row["program"]:
                        self._flags(ctx, row, args)

    def _flags(self, ctx: FileContext, row: dict, args: list[Word]) -> None:
        names = {row["flag"], *row.get("also", ())}
        value_pattern = re.compile(row["value"]) if row.get("value") else None
        for index, word in enumerate(args):
            option, equals, value = word.text.partition("=")
            if option not in names:
                continue
            if value_pattern is not None:
                if not equals:
                    value = args[index + 1].text if index + 1 < len(args) else ""
                if not value_pattern.search(value):
                    continue
            end = args[index + 1] if value_pattern is not None and not equals and index + 1 < len(args) else word
            ctx.findings.append(ctx.make_finding(self, word.line, word.column, end.end_line, end.end_column,
                                                 {"flag": word.text if equals or end is word else
                                                  f"{word.text} {end.text}", "why": row["why"],
                                                  "instead": row["instead"]}))
