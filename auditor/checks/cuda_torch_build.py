from __future__ import annotations

import re

from auditor.checks._dependency import (
    SCOPE_NOTE,
    DependencyRule,
    cuda_scoped,
    match_package,
    package_entries,
    report,
    where,
)
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import FileContext
from auditor.fix.layout import per_target_layout
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Edit, Fix, Severity
from auditor.readers import Requirement
from auditor.readers.dependencies import read_dependencies


class CudaTorchBuild(DependencyRule):
    fields = frozenset({"package", "where", "evidence"})
    code = "LK501"
    name = "cuda-torch-build"
    severity = Severity.MAJOR
    subject = "`{package}`"
    message = "`{package}` is pinned to a CUDA build ({evidence}){where}: other targets need a different wheel."
    suggestion = ("Pin the version without the local label (`{package}==X.Y.Z`) and choose the build per target with "
                  "the index instead ({wheel_indexes}; or `uv pip install --torch-backend=auto`), e.g. in per-target "
                  "requirement files or extras.")
    what = ("Finds requirements that name a CUDA build: local version labels such as `torch==2.1.0+cu121` or "
            "`torch-scatter==2.1.2+pt21cu121`, direct wheel URLs carrying `%2Bcu121` or a `/cu121/` path, and "
            "CUDA extras (`pkg[cu13]`) of packages no other dependency rule covers.") + SCOPE_NOTE
    why = ("A `+cuNNN` wheel only exists for Linux/Windows and only drives NVIDIA GPUs: on macOS the install fails, "
           "and on ROCm, XPU, TPU or Trainium machines it installs a torch that silently runs on the CPU or "
           "conflicts with the backend's own torch build.")
    instead = ("Keep the version and let the index pick the build:\n\n"
               "```text\n# requirements-cuda.txt\n--index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.0\n\n"
               "# requirements-rocm.txt\n--index-url https://download.pytorch.org/whl/rocm6.1\ntorch==2.1.0\n```\n\n"
               "or `uv pip install torch --torch-backend=auto`.")

    VALID = [
        Valid("# torch==2.1.0+cu121\ntorch==2.1.0\ntorchvision\n", path="requirements.txt"),
        Valid("torch==2.1.0+cpu\ntorchaudio==2.1.0+rocm5.6\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "runs on cu121 and nvidia"\ndependencies = ["torch>=2.1"]\n',
              path="pyproject.toml"),
        Valid("from setuptools import setup\nsetup(install_requires=['torch'])  # torch==2.1+cu121\n", path="setup.py"),
        Valid("jax[cuda12]\n", path="requirements.txt"),  # the gpu-kernel-package rule owns it
        Valid("dependencies:\n  - pytorch=2.1.0\n  - cpuonly\n  # - pytorch-cuda=11.8\n", path="environment.yml"),
    ]
    INVALID = [
        Invalid("numpy\ntorch==2.1.0+cu121\n", path="requirements.txt", line=2),
        Invalid("torch-scatter==2.1.2+pt21cu121 ; sys_platform == 'linux'\n", path="requirements.txt", line=1),
        Invalid("torchvision @ https://download.pytorch.org/whl/cu121/torchvision-0.16.0%2Bcu121-cp311-cp311-"
                "linux_x86_64.whl\n", path="requirements-gpu.txt", line=1),
        Invalid('[project]\nname = "x"\ndependencies = [\n    "numpy",\n    "torch==2.3.1+cu118",\n]\n',
                path="pyproject.toml", line=5),
        Invalid('[tool.poetry.dependencies]\npython = "^3.11"\ntorch = { version = "2.1.0+cu121", source = "torch" }\n',
                path="pyproject.toml", line=3),
        Invalid("[options]\ninstall_requires =\n    numpy\n    torch==2.0.1+cu117\n", path="setup.cfg", line=4),
        Invalid("from setuptools import setup\nREQUIRED = [\n    'torch==2.1.0+cu121',\n]\n"
                "setup(name='x', install_requires=REQUIRED)\n", path="setup.py", line=3),
        Invalid("humming-kernels[cu13]==0.1.19\n", path="requirements.txt", line=1),
        Invalid("name: x\ndependencies:\n  - pytorch=2.1.0\n  - pytorch-cuda=11.8\n", path="environment.yml", line=4),
        Invalid("dependencies:\n  - pytorch==2.1.0=py3.10_cuda11.8_cudnn8.7.0_0\n", path="conda-gpu.yml", line=2),
        Invalid("dependencies:\n  - pip:\n    - torch==2.1.0+cu118\n", path="environment.yaml", line=3),
        Invalid("FROM python:3.11\nRUN pip install \"torch==2.1.0+cu121\" torchvision\n", path="Dockerfile", line=2),
        # Fix (display): the pin without its label and the per-target layout, never applied.
        Invalid("torch==2.1.0+cu121\n", path="requirements.txt", line=1, fix_class="display", fixed=UNCHANGED),
    ]

    def check_file(self, ctx: FileContext) -> None:
        table = ctx.catalogue.table("packages").get("cuda_build", {})
        label = re.compile(table.get("local_label", r"$^"), re.IGNORECASE)
        url = re.compile(table.get("url", r"$^"), re.IGNORECASE)
        extras = re.compile(table.get("extras", r"$^"), re.IGNORECASE)
        entries = package_entries(ctx)
        conda_packages = set(table.get("conda_packages", ()))
        conda_build = re.compile(table.get("conda_build", r"$^"), re.IGNORECASE)
        for req in read_dependencies(ctx).requirements:
            evidence = self._evidence(req, label, url)
            if evidence is None and req.origin == "conda":
                found = conda_build.search(req.build or "")
                evidence = found.group(0) if found else (req.text if req.key in conda_packages else None)
            if evidence is None and match_package(req, entries) is None:
                evidence = next((f"[{e}]" for e in req.extras if extras.search(e)), None)
            if evidence is not None and not cuda_scoped(ctx, req):
                package = req.name or _file_name(req.url)
                fix = _layout_fix(ctx, req, evidence, package) if evidence.startswith("+") else None
                report(ctx, self, req, package=package, evidence=evidence, where=where(req), __fix=fix)

    @staticmethod
    def _evidence(req: Requirement, label: re.Pattern, url: re.Pattern) -> str | None:
        found = label.search(req.specifier)
        if found is not None:
            return found.group(0)
        if req.url:
            found = url.search(req.url)
            if found is not None:
                return found.group(0).replace("%2B", "+").replace("%2b", "+").strip("/")
        return None

    FIXES = (FixSpec("Q02", "display", "`torch==2.1.0+cu121` -> `torch==2.1.0`, with the per-target layout: one "
                     "requirements file (or extra) per target, each with the index serving its build"),)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """setup.py: the requirement string without its `+cuXXX` label, shown only."""
        evidence = report.fields.get("evidence", "")
        code = rewriter.code(report.node)
        if not evidence.startswith("+") or code.count(evidence) != 1:
            return None
        return FixPlan("display", _layout_message(rewriter.ctx, report.fields.get("package", "torch"), evidence),
                       [rewriter.replace(report.node, code.replace(evidence, ""))])


def _layout_message(ctx: FileContext, package: str, evidence: str) -> str:
    return (f"Drop `{evidence}` from the `{package}` pin and choose the build per target: "
            + per_target_layout(ctx.catalogue, label=evidence))


def _layout_fix(ctx: FileContext, req: Requirement, evidence: str, package: str) -> Fix | None:
    """The pin without its local label (shown, never applied: which file gets what is the team's call)."""
    owner = req.owner or ctx
    if req.node is not None or not 0 < req.line <= len(owner.lines):
        return None
    text = owner.lines[req.line - 1]
    span = text[req.column - 1:req.end_column - 1] if req.end_line == req.line else text[req.column - 1:]
    if span.count(evidence) != 1:
        return None
    column = req.column + span.index(evidence)
    edit = Edit(req.line, column, req.line, column + len(evidence), "")
    return Fix("display", _layout_message(ctx, package, evidence), (edit,))


def _file_name(url: str | None) -> str:
    return (url or "").rstrip("/").rsplit("/", 1)[-1][:80]
