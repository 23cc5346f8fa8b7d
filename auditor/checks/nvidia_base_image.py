from __future__ import annotations

from auditor.analysis.images import alternatives, nvidia_image
from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import FileContext
from auditor.model import Category, Severity
from auditor.readers.document import read_document


class NvidiaBaseImage(Rule):
    subject = "`{image}`"
    fields = frozenset({"image", "what", "how", "alternatives"})
    code = "LK509"
    name = "nvidia-base-image"
    category = Category.DEPENDENCY
    severity = Severity.MAJOR
    message = "`{image}` is {what}{how}: the container only runs on NVIDIA machines."
    suggestion = "Build from an image per target (a build argument or one Dockerfile each): {alternatives}."
    file_kinds = frozenset({"dockerfile", "compose", "yaml"})
    what = ("Finds container images that only run on NVIDIA: `FROM` lines of Dockerfiles (each stage of a multi-stage "
            "build on its own, `${ARG}` defaults resolved) and `image:` in compose files, Kubernetes/Helm manifests "
            "and other YAML: `nvidia/cuda`, `nvcr.io/nvidia/*`, `pytorch/pytorch` and CUDA variants of other images "
            "(`*:*-cuda12.1-*`, `*:*-cu121`, `*-gpu`). Patterns and per-target images are in rules/images.toml. A CPU "
            "or other-target image is not a finding.")
    why = ("The image brings the CUDA toolkit, NVIDIA's libraries and a CUDA build of torch; on ROCm, XPU, TPU, "
           "Trainium and CPU hosts the NVIDIA container runtime is missing and the GPU code paths fail. When the "
           "repository also builds an image for a target (e.g. `Dockerfile.rocm` from `rocm/pytorch`), that target "
           "counts as working.")
    instead = ("```dockerfile\nARG BASE_IMAGE=python:3.11-slim   # rocm/pytorch:latest, nvidia/cuda:12.4.1-runtime-ubuntu22.04, ...\n"
               "FROM ${BASE_IMAGE}\nARG TORCH_INDEX=https://download.pytorch.org/whl/cpu\n"
               "RUN pip install torch --index-url ${TORCH_INDEX}\n```")

    VALID = [
        Valid("FROM python:3.11-slim\nRUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n",
              path="Dockerfile"),
        Valid("# FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nFROM rocm/pytorch:latest\n", path="Dockerfile"),
        Valid("FROM ubuntu:22.04\nLABEL note=\"see nvidia/cuda for the GPU image\"\n", path="docker/Dockerfile.cpu"),
        Valid("services:\n  app:\n    image: python:3.11\n    command: echo nvidia/cuda\n", path="docker-compose.yml"),
        Valid("FROM nvidia-tools AS base\n", path="Containerfile"),
    ]
    INVALID = [
        Invalid("FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN apt-get update\n", path="Dockerfile", line=1),
        Invalid("FROM python:3.11 AS docs\nRUN echo\n\nFROM nvcr.io/nvidia/pytorch:24.01-py3 AS train\n",
                path="docker/Dockerfile.train", line=4),
        Invalid("ARG BASE=pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\nFROM ${BASE}\n", path="Dockerfile", line=2),
        Invalid("services:\n  trainer:\n    image: nvcr.io/nvidia/pytorch:24.01-py3\n", path="compose.yaml", line=3),
        Invalid("apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n"
                "        - name: train\n          image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n",
                path="k8s/job.yaml", line=8),
    ]

    def check_file(self, ctx: FileContext) -> None:
        for image in read_document(ctx).images:
            what = nvidia_image(image.image, ctx.catalogue)
            if what is not None:
                how = " (the default of a build argument)" if image.parameterized else ""  # ARG / ${VAR:-...}
                ctx.findings.append(ctx.make_finding(
                    self, image.line, image.column, image.end_line, image.end_column,
                    {"image": image.image, "what": what, "how": how, "alternatives": alternatives(ctx.catalogue)}))
