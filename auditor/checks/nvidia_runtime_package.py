from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Severity


class NvidiaRuntimePackage(PackageRule):
    code = "LK503"
    name = "nvidia-runtime-package"
    severity = Severity.MAJOR
    message = ("`{package}` pins NVIDIA CUDA runtime binaries{where}: unused on every other target, and with no "
               "wheels for {raising_targets} (the install fails there).")
    what = ("Finds explicit dependencies on NVIDIA runtime wheels: `nvidia-*-cu11/12/13` (cudnn, cublas, nccl, "
            "cuda-runtime, ...), their unsuffixed CUDA 13 names (`nvidia-cuda-runtime`), `cuda-python`, "
            "`cuda-bindings` and `cuda-toolkit`.") + SCOPE_NOTE
    why = ("The CUDA torch wheel already pulls the runtime it was built against. Pinning these by hand adds gigabytes "
           "of libraries no other target can use, breaks installs on macOS (no such wheels) and conflicts with the "
           "versions torch itself pins.")
    instead = "Remove the pins and let each target's torch build bring its own runtime:\n\n```text\ntorch==2.5.1\n```"

    VALID = [
        Valid("# nvidia-cudnn-cu12==8.9.2.26\ntorch\nnvidia-ml-py  # monitoring, another rule\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "Works on nvidia GPUs"\ndependencies = ["torch"]\n',
              path="pyproject.toml"),
        Valid("nvidia-dali-cuda120\n", path="requirements.txt"),  # a data pipeline, gpu-kernel-package
        Valid("dependencies:\n  - python=3.10\n  - numpy\n  - pip:\n    - cuda-bench-notes-unrelated-name-x\n",
              path="environment.yml"),
    ]
    INVALID = [
        Invalid("torch==2.4.0\nnvidia-cudnn-cu12==9.1.0.70\n", path="requirements.txt", line=2),
        Invalid("NVIDIA_NCCL_CU12>=2.20 ; platform_system == 'Linux'\n", path="requirements.txt", line=1),
        Invalid("nvidia-cuda-runtime>=13.0\n", path="requirements.txt", line=1),
        Invalid('[project]\nname = "x"\ndependencies = ["cuda-python>=12.4"]\n', path="pyproject.toml", line=3),
        Invalid('[project]\nname = "x"\n[project.optional-dependencies]\ngpu = [\n  "cuda-bindings",\n]\n',
                path="pyproject.toml", line=5),
        Invalid("[options.extras_require]\ngpu =\n    nvidia-cublas-cu11\n", path="setup.cfg", line=3),
        Invalid("import setuptools\nsetuptools.setup(install_requires=['numpy', 'nvidia-cuda-nvrtc-cu12'])\n",
                path="setup.py", line=2),
        Invalid("channels: [conda-forge]\ndependencies:\n  - python=3.10\n  - cudatoolkit=11.3\n", path="environment.yml",
                line=4),
        Invalid("FROM python:3.11\nRUN conda install -y -c nvidia cuda-nvcc=12.1\n", path="Dockerfile", line=2),
    ]
