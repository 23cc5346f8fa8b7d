from __future__ import annotations

import re
from urllib.parse import urlsplit

from auditor.checks._dependency import SCOPE_NOTE, DependencyRule, cuda_scoped, report
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import FileContext
from auditor.fix.layout import per_target_layout
from auditor.model import Edit, Fix, Severity
from auditor.readers import IndexUrl
from auditor.readers.dependencies import read_dependencies


class CudaWheelIndex(DependencyRule):
    fields = frozenset({"option", "target", "via"})
    code = "LK502"
    name = "cuda-wheel-index"
    severity = Severity.MAJOR
    subject = "{option} {target}"
    message = "{option} {target} serves CUDA builds{via}: every install from it gets NVIDIA wheels."
    suggestion = ("Choose the index per target: download.pytorch.org/whl/cuXXX for NVIDIA; {wheel_indexes}; e.g. one "
                  "requirements file or uv index per target selected with markers or extras, or `uv pip install "
                  "--torch-backend=auto`.")
    what = ("Finds package indexes and find-links locations that serve CUDA wheels: `--index-url`/"
            "`--extra-index-url`/`-f` lines pointing at download.pytorch.org/whl/cuNNN (nightly included), "
            "pypi.nvidia.com or pypi.ngc.nvidia.com, uv `[[tool.uv.index]]` / `[tool.uv.sources]` and Poetry "
            "`[[tool.poetry.source]]` entries that point at them, and `dependency_links`. An explicit index (uv "
            "`explicit = true`, Poetry `priority = \"explicit\"`) and `dependency_links` are info: no package installs "
            "from them unless a source entry pins it there, and that entry is reported on its own.") + SCOPE_NOTE
    why = ("The index decides which torch build gets installed: a cuNNN index installs the CUDA build everywhere, "
           "which on ROCm, XPU, TPU or Trainium machines runs on the CPU or conflicts with the backend's torch, "
           "and has no macOS wheels at all.")
    instead = ("```toml\n[[tool.uv.index]]\nname = \"pytorch-cu121\"\nurl = \"https://download.pytorch.org/whl/cu121\"\n"
               "explicit = true\n\n[[tool.uv.index]]\nname = \"pytorch-rocm\"\nurl = \"https://download.pytorch.org/"
               "whl/rocm6.2\"\nexplicit = true\n\n[tool.uv.sources]\ntorch = [\n  { index = \"pytorch-cu121\", extra = "
               "\"cuda\" },\n  { index = \"pytorch-rocm\", extra = \"rocm\" },\n]\n```")

    VALID = [
        Valid("--index-url https://download.pytorch.org/whl/cpu\ntorch\n", path="requirements.txt"),
        Valid("--extra-index-url https://download.pytorch.org/whl/rocm6.2\n# --extra-index-url "
              "https://download.pytorch.org/whl/cu121\ntorch\n", path="requirements.txt"),
        Valid("-f https://download.pytorch.org/whl/torch_stable.html\n--extra-index-url "
              "https://download.pytorch.org/whl/xpu\n", path="requirements.txt"),
        Valid('[[tool.uv.index]]\nname = "pytorch-cpu"\nurl = "https://download.pytorch.org/whl/cpu"\n\n'
              '[tool.uv.sources]\ntorch = { index = "pytorch-cpu" }\n', path="pyproject.toml"),
        Valid('[project]\nname = "x"\ndescription = "see https://pypi.nvidia.com"\n', path="pyproject.toml"),
        # The per-target structure this rule recommends: a CUDA-only file or extra.
        Valid("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch\n", path="requirements/cuda.txt"),
        Valid('[tool.uv.sources]\ntorch = [{ index = "pytorch-cu121", extra = "cu121" }]\n', path="pyproject.toml"),
        Valid("FROM python:3.11\n# RUN pip install torch --index-url https://download.pytorch.org/whl/cu121\n"
              "RUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n", path="Dockerfile"),
        Valid("FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\nRUN pip install torch --extra-index-url "
              "https://download.pytorch.org/whl/cu121\n", path="docker/Dockerfile.cuda"),
        Valid("name: x\nchannels:\n  - conda-forge\ndependencies:\n  - pytorch\n", path="environment.yml"),
    ]
    INVALID = [
        Invalid("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.0\n", path="requirements.txt",
                line=1),
        Invalid("-i https://download.pytorch.org/whl/nightly/cu128\n", path="requirements.txt", line=1),
        Invalid("--extra-index-url=https://pypi.nvidia.com\ntensorrt\n", path="requirements/gpu.txt", line=1),
        Invalid("-f https://data.pyg.org/whl/torch-2.1.0+cu121.html\ntorch-scatter\n", path="requirements.txt",
                line=1),
        Invalid('[project]\nname = "x"\n\n[[tool.uv.index]]\nname = "pytorch-cu124"\n'
                'url = "https://download.pytorch.org/whl/cu124"\nexplicit = true\n', path="pyproject.toml", line=6),
        Invalid('[tool.uv.sources]\ntorch = [\n  { index = "pytorch-cu121", marker = "sys_platform == \'linux\'" },\n]\n',
                path="pyproject.toml", line=3),
        Invalid('[tool.poetry]\nname = "x"\n\n[[tool.poetry.source]]\nname = "torch-gpu"\n'
                'url = "https://download.pytorch.org/whl/cu118"\npriority = "explicit"\n', path="pyproject.toml",
                line=6),
        # pip ignores dependency_links: reported (info, works everywhere) so that it can go
        Invalid("from setuptools import setup\nsetup(name='x', dependency_links=["
                "'https://download.pytorch.org/whl/cu113/torch_stable.html'])\n", path="setup.py", line=2),
        Invalid("FROM python:3.11\nRUN pip install --pre torch \\\n    --index-url https://download.pytorch.org/whl/nightly/cu118\n",
                path="Dockerfile", line=3),
        Invalid("name: x\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch\n", path="environment.yml", line=4),
        Invalid("#!/bin/bash\nconda install -y pytorch pytorch-cuda=12.1 -c pytorch -c nvidia\n", path="setup_env.sh", line=2),
        Invalid("#!/bin/bash\nuv pip install torch --torch-backend=cu126\n", path="install.sh", line=2),
        # Fix (display): the index line out of the shared file, with the per-target layout; never applied.
        Invalid("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch\n", path="requirements.txt", line=1,
                fix_class="display", fixed=UNCHANGED),
    ]

    def check_file(self, ctx: FileContext) -> None:
        table = ctx.catalogue.table("packages").get("cuda_index", {})
        hosts = {h.lower() for h in table.get("hosts", ())}
        url = re.compile(table.get("url", r"$^"), re.IGNORECASE)
        name = re.compile(table.get("name", r"$^"), re.IGNORECASE)
        channels = {c.lower() for c in table.get("channels", ())}
        for index in read_dependencies(ctx).indexes:
            cuda = (index.option.startswith("conda") and (index.name or "").lower() in channels) or \
                self._is_cuda(index, hosts, url, name)
            if cuda and not cuda_scoped(ctx, index):
                via = f" (routes `{index.package}`)" if index.package else ""
                inert = index.option == "dependency_links" or index.explicit
                if index.option == "dependency_links":  # pip has ignored them since 19.0
                    via = " to setuptools' retired easy_install only (pip has ignored `dependency_links` since 19.0)"
                elif index.explicit:  # what routes to it is a source entry, reported on its own
                    via = (" only to the packages a source entry pins to it (an explicit index: nothing else "
                           "installs from it)")
                report(ctx, self, index, option=index.option, target=index.url or f"index `{index.name}`", via=via,
                       __fix=_layout_fix(ctx, index), __inert=inert)

    FIXES = (FixSpec("Q02", "display", "a CUDA index line in a shared requirements file -> removed here, with the "
                     "per-target layout: the CUDA index in requirements-cuda.txt, ROCm/XPU/CPU indexes in their own"),)

    @staticmethod
    def _is_cuda(index: IndexUrl, hosts: set[str], url: re.Pattern, name: re.Pattern) -> bool:
        if not index.url:
            return bool(index.name) and name.search(index.name) is not None
        try:
            parts = urlsplit(index.url)
        except ValueError:
            return False
        host = (parts.hostname or "").lower()
        return host in hosts or url.search(parts.path) is not None


def _layout_fix(ctx: FileContext, index: IndexUrl) -> Fix | None:
    """Requirements files: the index line removed from the shared file (shown, never applied)."""
    owner = index.owner or ctx
    if owner.kind != "requirements" or not index.url.startswith("http") or not 0 < index.line <= len(owner.lines):
        return None
    last = index.line == len(owner.lines) and not owner.text.endswith("\n")
    end = (index.line, len(owner.lines[index.line - 1]) + 1) if last else (index.line + 1, 1)
    message = ("Keep this index out of the shared requirements and give each target its own: "
               + per_target_layout(ctx.catalogue, cuda_index=index.url))
    return Fix("display", message, (Edit(index.line, 1, *end, ""),))
