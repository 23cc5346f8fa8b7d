from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Severity


class NvidiaOnlyRuntimePackage(PackageRule):
    code = "LK505"
    name = "nvidia-only-runtime-package"
    severity = Severity.BLOCKER
    message = "`{package}` is NVIDIA-only ({what}){where}: there is no build for any other target."
    what = ("Finds dependencies on NVIDIA-only runtimes and libraries with no drop-in alternative: TensorRT "
            "(tensorrt*, torch-tensorrt, tensorrt-llm, polygraphy, nvidia-modelopt), pycuda, numba-cuda, "
            "Transformer Engine, CUTLASS (nvidia-cutlass, nvidia-cutlass-dsl), spconv-cuNNN and cumm-cuNNN.") + SCOPE_NOTE
    why = ("These packages exist only for NVIDIA GPUs. When they are on the deployment or training path the project "
           "cannot run anywhere else until that path is rebuilt on portable tools.")
    instead = ("Export and compile per target instead of depending on TensorRT:\n\n```python\n"
               "ep = torch.export.export(model, (example,))\n"
               "torch._inductor.aoti_compile_and_package(ep, package_path=\"model.pt2\")\n```\n\n"
               "and keep NVIDIA-only libraries behind an optional extra with a plain-torch fallback.")

    VALID = [
        Valid("# tensorrt==10.0.1\ntorch\nonnx\n", path="requirements.txt"),
        Valid("numba>=0.59\nspconv\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "exports to TensorRT on nvidia"\ndependencies = ["onnx"]\n',
              path="pyproject.toml"),
    ]
    INVALID = [
        Invalid("torch\ntensorrt==10.0.1\n", path="requirements.txt", line=2),
        Invalid("torch-tensorrt>=2.4 ; platform_machine == 'x86_64'\n", path="requirements.txt", line=1),
        Invalid("pycuda\n", path="requirements.txt", line=1),
        Invalid("spconv-cu120==2.3.6\ncumm-cu120\n", path="requirements.txt", line=1),
        Invalid("nvidia-cutlass-dsl[cu13]==4.8.0\n", path="requirements.txt", line=1),
        Invalid('[project]\nname = "x"\ndependencies = [\n  "transformer_engine[pytorch]>=1.9",\n]\n',
                path="pyproject.toml", line=4),
        Invalid("from setuptools import setup\nDEPS = ['numpy']\nDEPS.append('numba-cuda')\n"
                "setup(install_requires=DEPS)\n", path="setup.py", line=3),
    ]
