from __future__ import annotations

import re

from auditor.analysis.images import runtime_table
from auditor.checks.base import Invalid, Rule, Valid
from auditor.context import FileContext
from auditor.model import Category, Severity
from auditor.readers.document import Node, read_document


class NvidiaContainerRuntime(Rule):
    subject = "{what}"
    fields = frozenset({"what"})
    code = "LK605"
    name = "nvidia-container-runtime"
    category = Category.ENV
    severity = Severity.MAJOR
    message = "{what}: the workload is scheduled or started only where the NVIDIA container stack is."
    suggestion = ("Keep the device request per target ({container_requests}), with compose profiles, Helm "
                  "values or Kustomize overlays per target.")
    file_kinds = frozenset({"compose", "yaml", "shell", "notebook"})
    what = ("Finds what asks for the NVIDIA container runtime or NVIDIA nodes: compose `runtime: nvidia` and "
            "`deploy.resources.reservations.devices` with `driver: nvidia` (or `capabilities: [gpu]` with no other "
            "driver); Kubernetes/Helm `nvidia.com/gpu` resource limits and requests, `runtimeClassName: nvidia`, node "
            "selectors, affinities and tolerations on `nvidia.com/*` or NVIDIA accelerator labels; `docker run "
            "--gpus` / `--runtime=nvidia` and `nvidia-docker` in scripts and notebooks.")
    why = ("These settings only resolve on hosts with the NVIDIA driver and container toolkit: elsewhere the "
           "container fails to start (unknown runtime, no device driver) or the pod stays Pending forever.")
    instead = ("```yaml\n# values-rocm.yaml (Helm) / a compose profile per target\nresources:\n  limits:\n"
               "    amd.com/gpu: 1        # nvidia.com/gpu on NVIDIA, google.com/tpu on TPU\n```")

    VALID = [
        Valid("services:\n  app:\n    image: rocm/pytorch:latest\n    devices:\n      - /dev/kfd\n      - /dev/dri\n",
              path="docker-compose.yml"),
        Valid("apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n    note: \"was nvidia.com/gpu\"\nspec:\n"
              "  containers:\n    - name: x\n      resources:\n        limits:\n          amd.com/gpu: 1\n",
              path="k8s/pod.yaml"),
        Valid("#!/bin/sh\n# docker run --gpus all img\necho \"docker run --gpus all\"\ndocker run --rm img\n",
              path="run.sh"),
        Valid("trainer:\n  accelerator: gpu  # nvidia\n  description: runs on nvidia.com/gpu nodes\n", path="conf/x.yaml"),
    ]
    INVALID = [
        Invalid("services:\n  train:\n    image: python:3.11\n    runtime: nvidia\n", path="docker-compose.yml",
                line=4),
        Invalid("services:\n  train:\n    deploy:\n      resources:\n        reservations:\n          devices:\n"
                "            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n",
                path="compose.yaml", line=7),
        Invalid("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: x\n      resources:\n        limits:\n"
                "          nvidia.com/gpu: 1\n", path="deploy/pod.yaml", line=8),
        Invalid("spec:\n  nodeSelector:\n    cloud.google.com/gke-accelerator: nvidia-tesla-t4\n  tolerations:\n"
                "    - key: nvidia.com/gpu\n      operator: Exists\n", path="charts/app/values.yaml", line=3),
        Invalid("#!/bin/bash\ndocker run --rm --gpus all -v $PWD:/w img python train.py\n", path="scripts/run.sh",
                line=2),
    ]

    def check_file(self, ctx: FileContext) -> None:
        table = runtime_table(ctx.catalogue)
        document = read_document(ctx)
        for tree in document.trees:
            self._tree(ctx, tree, table)
        for command in document.commands:
            self._command(ctx, command, table)

    def _report(self, ctx: FileContext, node, what: str) -> None:
        ctx.findings.append(ctx.make_finding(self, node.line, node.column, node.end_line, node.end_column,
                                             {"what": what}))

    def _tree(self, ctx: FileContext, tree: Node, table: dict) -> None:
        runtimes = set(table.get("runtimes", ()))
        drivers = set(table.get("drivers", ()))
        resource = re.compile(table.get("resource", r"$^"))
        label_key = re.compile(table.get("label_key", r"$^"))
        label_value = re.compile(table.get("label_value", r"$^"))
        for path, node, key in tree.walk():
            name = path[-1] if path else ""
            if node.shape == "map" and name not in ("annotations", "labels"):
                for k, v in node.pairs:
                    if k.shape != "scalar":
                        continue
                    if resource.search(k.value) and path[-1:] in (("limits",), ("requests",), ("nodeSelector",)):
                        self._report(ctx, k, f"`{k.value}` requests an NVIDIA GPU resource or node")
                    elif (label_key.search(k.value) and v.shape == "scalar" and label_value.search(v.value)
                          and name in ("nodeSelector", "node_selector", "selector")):
                        self._report(ctx, k, f"`{k.value}: {v.value}` selects NVIDIA nodes")
                if name in ("devices", "[]") and node.get("capabilities") is not None:
                    driver = node.get("driver")
                    if driver is None or (driver.shape == "scalar" and driver.value in drivers):
                        where = driver or node.get("capabilities")
                        self._report(ctx, where, "a device reservation for the NVIDIA driver")
            if node.shape != "scalar" or key is None:
                continue
            if name in ("runtime", "runtimeClassName") and node.value in runtimes:
                self._report(ctx, key, f"`{name}: {node.value}` needs the NVIDIA container runtime")
            elif name in ("key", "values", "[]") and resource.search(node.value) and (
                    "tolerations" in path or "nodeAffinity" in path or "matchExpressions" in path):
                self._report(ctx, node, f"`{node.value}` schedules onto NVIDIA nodes")

    def _command(self, ctx: FileContext, command, table: dict) -> None:
        argv = command.argv
        program = argv[0].rsplit("/", 1)[-1]
        if program in table.get("commands", ()):
            self._report(ctx, command.words[0], f"`{program}` is the NVIDIA container toolkit")
            return
        if program not in ("docker", "podman") or "run" not in argv[1:3]:
            return
        for index, word in enumerate(command.words[1:], 1):
            option, _, value = word.text.partition("=")
            if option == "--gpus":
                self._report(ctx, word, "`docker run --gpus` uses the NVIDIA container toolkit")
            elif option == "--runtime":
                value = value or (argv[index + 1] if index + 1 < len(argv) else "")
                if value in table.get("runtimes", ()):
                    self._report(ctx, word, "`--runtime=nvidia` needs the NVIDIA container runtime")
