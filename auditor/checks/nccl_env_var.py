from __future__ import annotations

from auditor.checks._env import EnvVarRule, rule_tokens
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class NcclEnvVar(EnvVarRule):
    code = "LK304"
    name = "nccl-env-var"
    category = Category.DISTRIBUTED
    severity = Severity.INFO
    message = "`{var}` {why}; the process-group backends of {degrading_targets} ignore it."
    suggestion = "Set it only when the backend is NCCL, next to the equivalent for other backends ({instead})."
    tokens = rule_tokens("nccl-env-var")
    what = ("Finds `NCCL_*` and `TORCH_NCCL_*` environment variables set or read in code: `os.environ[...]`, "
            "`os.getenv(...)`, `os.environ.get/setdefault/pop(...)`, `monkeypatch.setenv(...)`, dict keys, "
            "`dict(NCCL_X=...)` and `\"NCCL_X\" in os.environ`. "
            "Also an assignment to a name like `*_env_var` and, for exact names, an element of a "
            "list/tuple/set literal (`for k in (\"CUDA_HOME\", ...)`).")
    why = ("These variables tune NCCL only (RCCL reads them on ROCm). On XPU (xccl/oneCCL), CPU and MPS (gloo), "
           "TPU and Trainium they are silently ignored, so the tuning or debugging they promise does not happen.")
    instead = ("Scope the settings to the backend in use:\n\n```python\nbackend = dist.get_default_backend_for_device(DEVICE)\n"
               "if backend == \"nccl\":\n    os.environ.setdefault(\"NCCL_DEBUG\", \"WARN\")\n"
               "elif backend == \"gloo\":\n    os.environ.setdefault(\"GLOO_SOCKET_IFNAME\", \"eth0\")\n```")

    VALID = [
        Valid('import logging\nlogging.info("set NCCL_DEBUG=INFO to debug hangs")\nprint("NCCL_DEBUG")\n'),
        Valid('"""Set NCCL_SOCKET_IFNAME before launching."""\n# os.environ["NCCL_DEBUG"] = "INFO"\n'),
        Valid('import os\nnames = [k for k in os.environ if k.startswith("NCCL_")]\n'),
        Valid('import os\nos.environ["GLOO_SOCKET_IFNAME"] = "eth0"\n'),
        Valid('parser.add_argument("--debug", help="sets NCCL_DEBUG")\n'),
        Valid('if name == "NCCL_DEBUG":\n    pass\n'),
        Valid('backends = ["NCCL_SYMM_MEM", "CUSTOM"]\nbackends.append("NCCL_SYMM_MEM")\n'),
        Valid("services:\n  train:\n    image: python:3.11\n    environment:\n      GLOO_SOCKET_IFNAME: eth0\n"
              "    labels:\n      note: NCCL_DEBUG\n", path="compose.yaml"),
    ]
    INVALID = [
        Invalid('import os\nos.environ["NCCL_DEBUG"] = "INFO"\n', line=2),
        Invalid('import os\nlevel = os.getenv("NCCL_DEBUG", "WARN")\n', line=2),
        Invalid('from os import environ\nenviron.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")\n', line=2),
        Invalid('import os\nif "NCCL_SOCKET_IFNAME" not in os.environ:\n    pass\n', line=2),
        Invalid('import os\nenv = dict(os.environ, NCCL_P2P_DISABLE="1")\n', line=2),
        Invalid('import subprocess\nsubprocess.run(cmd, env={"NCCL_IB_DISABLE": "1"})\n', line=2),
        Invalid('def test_x(monkeypatch):\n    monkeypatch.setenv("NCCL_DEBUG", "INFO")\n', line=2),
        Invalid("services:\n  train:\n    image: python:3.11\n    environment:\n      NCCL_DEBUG: INFO\n",
                path="compose.yaml", line=5),
        Invalid("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: x\n      env:\n        - name: NCCL_SOCKET_IFNAME\n"
                "          value: eth0\n", path="k8s/pod.yaml", line=7),
    ]
