from __future__ import annotations

import re

from auditor.catalogue import labelled_patterns
from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import FileContext
from auditor.model import Category, Severity
from auditor.readers.document import Command, Word, read_document


class CudaSystemPackage(Rule):
    subject = "`{package}`"
    fields = frozenset({"package", "what"})
    code = "LK510"
    name = "cuda-system-package"
    category = Category.DEPENDENCY
    severity = Severity.MAJOR
    message = ("`{package}` is {what}: it comes only from NVIDIA's package repository (or NVIDIA's sources) and "
               "serves only NVIDIA GPUs, so the image builds for NVIDIA alone; it raises on {raising_targets}.")
    suggestion = ("Install the CUDA libraries only in the NVIDIA variant of the image (a build argument or one "
                  "Dockerfile per target), or rely on the libraries torch's own wheels bring.")
    file_kinds = frozenset({"dockerfile", "shell"})
    what = ("Finds NVIDIA system packages installed by `apt-get` / `apt` / `yum` / `dnf` / `microdnf` / `zypper` in "
            "Dockerfile `RUN` lines and shell scripts (`cuda-*`, `libcudnn*`, `libnccl*`, `libcupti*`, `libcublas*`, "
            "`libnvinfer*` / TensorRT, `datacenter-gpu-manager`, `nvidia-*` drivers and container toolkit), and "
            "scripts run to install or build NCCL, cuDNN or the CUDA toolkit (`bash install_nccl.sh`). Package "
            "patterns are in rules/packages.toml `[system_packages]`.")
    why = ("These packages are NVIDIA's builds of its own libraries: other targets' base images have no repository "
           "that provides them (`E: Unable to locate package`), and where they install they serve no other GPU. "
           "torch's wheels already bring the CUDA, cuDNN and NCCL runtimes they need.")
    instead = ("```dockerfile\nARG TARGET=cpu   # cuda, rocm, ...\nRUN if [ \"$TARGET\" = cuda ]; then apt-get install -y "
               "libnccl2; fi\n```\n\nOr one Dockerfile per target, each from that target's base image.")

    VALID = [
        Valid("FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y git curl libgl1\n", path="Dockerfile"),
        Valid("FROM ubuntu:22.04\n# RUN apt-get install -y cuda-toolkit-12-1\nRUN echo \"apt-get install libnccl2\"\n",
              path="Dockerfile"),
        Valid("#!/bin/bash\napt-get install -y rocm-hip-sdk miopen-hip rccl\n", path="scripts/setup.sh"),
        Valid("#!/bin/bash\napt-get remove -y cuda-toolkit-12-1\napt-cache show libcudnn8\n", path="scripts/clean.sh"),
    ]
    INVALID = [
        Invalid("FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y --no-install-recommends \\\n"
                "    git cuda-toolkit-12-1 libcudnn8=8.9.* libnccl2 libnccl-dev libcupti-dev\n",
                path="Dockerfile", line=3),
        Invalid("#!/bin/bash\nset -e\nsudo apt install -y datacenter-gpu-manager\n", path="scripts/node.sh", line=3),
        Invalid("FROM rockylinux:9\nRUN dnf install -y cuda-compiler-12-4 libcublas-devel-12-4\n",
                path="docker/Dockerfile-gpu", line=2),
        Invalid("FROM ubuntu:22.04\nCOPY install_nccl.sh /tmp/\nRUN bash /tmp/install_nccl.sh 2.21.5\n",
                path="Dockerfile", line=3),
    ]

    def check_file(self, ctx: FileContext) -> None:
        table = ctx.catalogue.table("packages").get("system_packages", {})
        managers = frozenset(table.get("managers", ()))
        patterns = labelled_patterns(tuple(table.get("patterns", {}).items()))
        scripts = re.compile(table.get("scripts", r"$^"))
        for command in read_document(ctx).commands:
            for word, what in self._installed(command, managers, patterns, scripts):
                ctx.findings.append(ctx.make_finding(self, word.line, word.column, word.end_line, word.end_column,
                                                     {"package": word.text, "what": what}))

    @staticmethod
    def _installed(command: Command, managers: frozenset[str], patterns, scripts: re.Pattern[str]):
        """(word, what it is) for each NVIDIA package `command` installs, or the install script it runs."""
        words = command.words
        start = 1 if words and words[0].text == "sudo" else 0
        if len(words) > start and words[start].text.rsplit("/", 1)[-1] in managers:
            rest = words[start + 1:]
            verb = next((i for i, w in enumerate(rest) if not w.text.startswith("-")), None)
            if verb is None or rest[verb].text != "install":
                return
            for word in rest[verb + 1:]:
                name = re.split(r"[=<>:]", word.text, maxsplit=1)[0].lower()
                if name.startswith("-") or not name:
                    continue
                what = next((label for label, pattern in patterns if pattern.fullmatch(name)), None)
                if what is not None:
                    yield word, what
            return
        for word in words[start:start + 2]:  # `bash install_nccl.sh`, `./build_nccl.sh`
            script = word.text.rsplit("/", 1)[-1]
            if scripts.fullmatch(script):
                yield Word(line=word.line, column=word.column, end_line=word.end_line, end_column=word.end_column,
                           text=script), "a script that installs or builds NVIDIA's libraries"
