from __future__ import annotations

from auditor.checks._env import EnvVarRule, rule_tokens
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaRuntimeEnv(EnvVarRule):
    code = "LK602"
    name = "cuda-runtime-env"
    category = Category.ENV
    severity = Severity.INFO
    message = "`{var}` {why}; no other target reads it."
    suggestion = "Portable equivalent: {instead}."
    tokens = rule_tokens("cuda-runtime-env")
    what = ("Finds CUDA runtime, allocator and toolkit variables (`CUDA_LAUNCH_BLOCKING`, `PYTORCH_CUDA_ALLOC_CONF`, "
            "`TORCH_CUDA_ARCH_LIST`, `CUBLAS_WORKSPACE_CONFIG`, `CUDA_HOME`, `CUDA_DEVICE_MAX_CONNECTIONS`, ...; the "
            "list is `[[env_var]]` in rules/env.toml) set or read in code. "
            "Also an assignment to a name like `*_env_var` and, for exact names, an element of a "
            "list/tuple/set literal (`for k in (\"CUDA_HOME\", ...)`).")
    why = ("They configure the CUDA driver, the CUDA caching allocator, cuBLAS or the CUDA toolkit. Other targets "
           "ignore them, so the debugging, memory or determinism behaviour they promise silently disappears, and "
           "extension builds keyed on them never see the target's toolchain.")
    instead = ("Use the device-neutral setting where one exists: `PYTORCH_ALLOC_CONF` (torch 2.10) for "
               "`PYTORCH_CUDA_ALLOC_CONF`, `torch.use_deterministic_algorithms(True)` for `CUBLAS_WORKSPACE_CONFIG`, "
               "`PYTORCH_ROCM_ARCH` / `TORCH_XPU_ARCH_LIST` next to `TORCH_CUDA_ARCH_LIST`, "
               "`AMD_SERIALIZE_KERNEL=3` next to `CUDA_LAUNCH_BLOCKING`.")

    VALID = [
        Valid('print("try CUDA_LAUNCH_BLOCKING=1 to debug")\n'),
        Valid('"""Reads CUDA_HOME."""\n# os.environ["CUDA_HOME"]\n'),
        Valid('import os\nos.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"\n'),
        Valid('if name == "CUDA_HOME":\n    pass\nerrors = ["CUDA_ERROR_OUT_OF_MEMORY"]\n'),
        Valid('warnings.warn("set PYTORCH_CUDA_ALLOC_CONF to avoid fragmentation")\n'),
        Valid("FROM python:3.11\nENV PYTORCH_ALLOC_CONF=expandable_segments:True\n# ENV FORCE_CUDA=1\n", path="Dockerfile"),
    ]
    INVALID = [
        Invalid('import os\nos.environ["CUDA_LAUNCH_BLOCKING"] = "1"\n', line=2),
        Invalid('import os\nos.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")\n', line=2),
        Invalid('from os import environ\narch = environ.get("TORCH_CUDA_ARCH_LIST")\n', line=2),
        Invalid('import os\ncuda_home = os.getenv("CUDA_HOME") or os.getenv("CUDA_PATH")\n', line=2),
        Invalid('import os\nos.environ.update(CUBLAS_WORKSPACE_CONFIG=":4096:8")\n', line=2),
        Invalid('env = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}\n', line=1),
        Invalid("FROM python:3.11\nENV FORCE_CUDA=1 \\\n    TORCH_CUDA_ARCH_LIST=\"7.0 8.0 9.0\"\n", path="Dockerfile", line=2),
        Invalid("FROM python:3.11\nENV FORCE_CUDA=1 \\\n    TORCH_CUDA_ARCH_LIST=\"7.0 8.0 9.0\"\n", path="Dockerfile", line=3),
        Invalid("#!/bin/bash\nexport CUDA_HOME=/usr/local/cuda\n", path="env.sh", line=2),
    ]
