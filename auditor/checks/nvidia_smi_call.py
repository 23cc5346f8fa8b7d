from __future__ import annotations

import libcst as cst

from auditor.checks._values import ValueFlowRule
from auditor.checks.base import Invalid, Valid
from auditor.context import FileContext, PythonContext
from auditor.model import Category, Severity, cap_effect
from auditor.python.syntax import callee_name, is_message_call, string_value
from auditor.readers.document import read_document
from auditor.targets import effect_fields


def _command_text(node: cst.BaseExpression) -> str | None:
    """The leading text of a string, f-string or `"..." + x` command; None when not a string."""
    value = string_value(node)
    if value is not None:
        return value
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return first.value if isinstance(first, cst.FormattedStringText) else None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _command_text(node.left)
    return None


class NvidiaSmiCall(ValueFlowRule):
    fields = frozenset({"tool", "does", "outcome"})
    code = "LK603"
    name = "nvidia-smi-call"
    category = Category.ENV
    severity = Severity.MINOR
    subject = "This `{tool}` call"
    message = ("{does} `{tool}`, which exists only on machines with the NVIDIA driver's tools (nvidia-smi, DCGM's dcgmi) "
               "or the CUDA toolkit (nvcc): {outcome}.")
    suggestion = ("Ask PyTorch instead (`torch.accelerator.device_count()`, `torch.accelerator.get_memory_info()`), "
                  "or call the target's own tool ({monitoring_tools}) and treat a missing tool as optional.")
    tokens = ("nvidia-smi", "nvcc", "dcgmi")
    file_kinds = frozenset({"python", "shell", "dockerfile", "notebook"})
    what = ('Finds "nvidia-smi ...", "dcgmi ..." and "nvcc ..." commands (a string, f-string or a list/tuple whose first element '
            "starts with one) passed to a call: subprocess.run/Popen/check_output/call, os.system, os.popen, "
            "shutil.which and shell helpers, directly or through a variable; in shell scripts, Dockerfile `RUN`/`CMD` "
            "lines and notebook `!` lines, `nvidia-smi` or `nvcc` run as a command (also inside `$(...)`). In an "
            "environment report (`collect_env`, an `env` command) it is reported as display.")
    why = ("nvidia-smi ships with the NVIDIA driver. On ROCm, XPU, TPU, Trainium, MPS and CPU machines the binary "
           "is missing, so device discovery or monitoring built on it raises (FileNotFoundError, "
           "CalledProcessError) or reports no devices.")
    instead = ("```python\ncount = torch.accelerator.device_count()\n"
               "free, total = torch.accelerator.get_memory_info()  # torch 2.10\n```\n\n"
               "Vendor tools when a CLI is really needed: `amd-smi` (ROCm), `xpu-smi` (XPU), `neuron-ls` / "
               "`neuron-top` (Trainium).")

    VALID = [
        Valid('import logging\nlogging.warning("nvidia-smi not found, skipping GPU stats")\n'),
        Valid('"""Like nvidia-smi, but in Python."""\n# subprocess.run(["nvidia-smi"])\n'),
        Valid('print("run nvidia-smi to check the driver")\n'),
        Valid('if command == "nvidia-smi topo -m":\n    pass\n'),
        Valid('raise RuntimeError("nvidia-smi failed")\n'),
        Valid('msg = "nvidia-smi is missing"\nlogger.error(msg)\n'),
        Valid('import subprocess\nsubprocess.run(["amd-smi", "list"])\n'),
        Valid('#!/bin/bash\necho "run nvidia-smi to check"  # nvidia-smi\n# nvidia-smi -L\n', path="run.sh"),
        Valid("FROM python:3.11\n# RUN nvidia-smi\nRUN echo nvidia-smi\n", path="Dockerfile"),
    ]
    INVALID = [
        Invalid('import subprocess\nout = subprocess.check_output(["nvidia-smi", "-L"])\n', line=2),
        Invalid('import os\nos.system("nvidia-smi --query-gpu=memory.used --format=csv")\n', line=2),
        Invalid('from subprocess import run as sh\nsh("nvidia-smi", shell=True)\n', line=2),
        Invalid('import shutil\nhave_gpu = shutil.which("nvidia-smi") is not None\n', line=2),
        Invalid('import subprocess\ncmd = ["nvidia-smi", "topo", "-m"]\nsubprocess.run(cmd)\n', line=2),
        Invalid('import os\nos.popen(f"nvidia-smi -i {gpu} --query-gpu=name")\n', line=2),
        Invalid('info = run_and_read_all(run_lambda, "nvidia-smi topo -m")\n', line=1),
        Invalid("#!/bin/bash\nset -e\nNUM_GPUS=$(nvidia-smi -L | wc -l)\n", path="scripts/train.sh", line=3),
        Invalid("#!/bin/bash\n#SBATCH --nodes=2\ndcgmi diag -r 1\n", path="jobs/health.slurm", line=3),
        Invalid("FROM python:3.11\nRUN pip install torch && \\\n    nvidia-smi\n", path="Dockerfile", line=3),
        Invalid('import subprocess\nout = subprocess.check_output(["nvcc", "--version"])\n', line=2),
        Invalid('import subprocess\n\ndef get_env_info():\n    return subprocess.check_output(["nvcc", "-V"])\n',
                line=4, context="display"),
    ]

    def check_file(self, ctx: FileContext) -> None:
        """Shell-like files: `nvidia-smi` or `nvcc` run as a command."""
        commands = tuple(ctx.catalogue.table("env").get("nvidia_smi", {}).get("commands", ("nvidia-smi",)))
        for command in read_document(ctx).commands:
            tool = command.argv[0].rsplit("/", 1)[-1]
            if tool in commands:
                word = command.words[0]
                ctx.findings.append(ctx.make_finding(self, word.line, word.column, command.end_line,
                                                     command.end_column, {"tool": tool, **self._runs()}))

    def _command(self, node: cst.BaseExpression, ctx: PythonContext) -> cst.BaseExpression | None:
        """`node` when it is an nvidia-smi command string or argv list."""
        first = node
        if isinstance(node, (cst.List, cst.Tuple)):
            if not node.elements:
                return None
            first = node.elements[0].value
        text = _command_text(first)
        commands = tuple(ctx.catalogue.table("env").get("nvidia_smi", {}).get("commands", ("nvidia-smi",)))
        return node if text is not None and text.startswith(commands) else None

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        if is_message_call(node, ctx.catalogue):
            return
        for arg in node.args:
            value = arg.value
            if isinstance(value, (cst.Name, cst.Attribute)):
                self.mark_used(value, ctx)
            elif self._command(value, ctx) is not None:
                self.report_value(value, ctx, probe=callee_name(node) == "which")

    def report_value(self, node: cst.CSTNode, ctx: PythonContext, probe: bool = False) -> None:
        first = node.elements[0].value if isinstance(node, (cst.List, cst.Tuple)) and node.elements else node
        text = _command_text(first) or ""
        ctx.report(self, node, tool=text.split()[0] if text.split() else "nvidia-smi",
                   **(self._looks_for() if probe else self._runs()))

    def _runs(self) -> dict[str, str]:
        return {"does": "Runs", "outcome": f"this fails on {effect_fields(self.effects())['raising_targets']}"}

    def _looks_for(self) -> dict:
        """`shutil.which("nvidia-smi")` runs nothing: where the tool is missing it returns None, and
        the code that asked goes on without it (what it then runs is reported where it runs)."""
        effects = {t: cap_effect(e) for t, e in self.effects().items()}
        where = effect_fields(effects)["degrading_targets"]
        return {"does": "Looks for", "__effects": effects,
                "outcome": f"on {where} it finds nothing, so whatever needs the tool is skipped there"}

    def values_in(self, value: cst.BaseExpression, ctx: PythonContext) -> list[cst.BaseExpression]:
        """Commands stored for later (`cmd = ["nvidia-smi", ...]`, `cmd = env_cmd or "nvidia-smi"`)."""
        values = [value.left, value.right] if isinstance(value, cst.BooleanOperation) else [value]
        return [v for v in values if self._command(v, ctx) is not None]
