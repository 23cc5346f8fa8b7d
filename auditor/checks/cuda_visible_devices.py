from __future__ import annotations

from auditor.checks._env import EnvVarRule, rule_tokens
from auditor.checks.base import Invalid, Valid, notebook_example
from auditor.model import Category, Severity


class CudaVisibleDevices(EnvVarRule):
    code = "LK601"
    name = "cuda-visible-devices"
    category = Category.ENV
    severity = Severity.MINOR
    message = "`{var}` {why}; on {degrading_targets} device isolation is silently lost."
    suggestion = "Set the target's visibility variable as well ({instead}), or pin the device index in code."
    tokens = rule_tokens("cuda-visible-devices")
    what = ("Finds `CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` set or read in code "
            "(`os.environ[...]`, `os.getenv`, `os.environ.get/setdefault/pop`, `monkeypatch.setenv`, dict keys, "
            "`dict(NAME=...)`, `\"NAME\" in os.environ`). "
            "Also an assignment to a name like `*_env_var` and, for exact names, an element of a "
            "list/tuple/set literal (`for k in (\"CUDA_HOME\", ...)`).")
    why = ("Only the CUDA runtime (and ROCm, which also honours it) reads these. Elsewhere every process sees every "
           "device, so per-rank isolation, GPU pinning in tests and device counting derived from the variable "
           "silently stop working.")
    instead = ("Use the target's own variable next to the CUDA one, or select the device index in code:\n\n"
               "```python\ntorch.accelerator.set_device_index(local_rank)\n```\n\n"
               "ROCm: `HIP_VISIBLE_DEVICES`; XPU: `ZE_AFFINITY_MASK`; Trainium: `NEURON_RT_VISIBLE_CORES`; "
               "TPU: `TPU_VISIBLE_CHIPS`.")

    VALID = [
        Valid('import logging\nlogging.warning("CUDA_VISIBLE_DEVICES is not set")\n'),
        Valid('"""Respects CUDA_VISIBLE_DEVICES."""\n# os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'),
        Valid('parser.add_argument("--gpus", help="overrides CUDA_VISIBLE_DEVICES")\n'),
        Valid('if key == "CUDA_VISIBLE_DEVICES":\n    pass\n'),
        Valid('import os\nos.environ["ZE_AFFINITY_MASK"] = "0"\n'),
        Valid('raise RuntimeError("CUDA_VISIBLE_DEVICES")\n'),
        Valid('name = "CUDA_VISIBLE_DEVICES"\n'),
        Valid("#!/bin/bash\n# export CUDA_VISIBLE_DEVICES=0\necho \"CUDA_VISIBLE_DEVICES=0\"\nexport HIP_VISIBLE_DEVICES=0\n",
              path="run.sh"),
        Valid("FROM python:3.11\n# ENV CUDA_VISIBLE_DEVICES=0\nLABEL x=\"CUDA_VISIBLE_DEVICES\"\n", path="Dockerfile"),
    ]
    INVALID = [
        Invalid('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\n', line=2),
        Invalid('import os\ngpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")\n', line=2),
        Invalid('from os import environ\nif "CUDA_VISIBLE_DEVICES" in environ:\n    pass\n', line=2),
        Invalid('import os\nos.environ.update(CUDA_DEVICE_ORDER="PCI_BUS_ID")\n', line=2),
        Invalid('import os as o\nvisible = o.getenv("NVIDIA_VISIBLE_DEVICES")\n', line=2),
        Invalid('import subprocess\nsubprocess.Popen(cmd, env={**env, "CUDA_VISIBLE_DEVICES": str(rank)})\n', line=2),
        Invalid('def test_x(monkeypatch):\n    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")\n', line=2),
        Invalid('import os\nfor key in ("CUDA_VISIBLE_DEVICES", "LOCAL_RANK"):\n    os.environ.pop(key, None)\n', line=2),
        Invalid('class Platform:\n    device_control_env_var: str = "CUDA_VISIBLE_DEVICES"\n', line=2),
        Invalid("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\npython train.py\n", path="run.sh", line=2),
        Invalid("FROM python:3.11\nENV NVIDIA_VISIBLE_DEVICES all\n", path="Dockerfile", line=2),
        Invalid(notebook_example(("markdown", "Pick a GPU"), ("code", "import os\n%env CUDA_VISIBLE_DEVICES=0\n")),
                path="nb.ipynb", line=2),
        Invalid("services:\n  app:\n    image: python:3.11\n    environment:\n      - CUDA_VISIBLE_DEVICES=0\n",
                path="docker-compose.yml", line=5),
    ]
