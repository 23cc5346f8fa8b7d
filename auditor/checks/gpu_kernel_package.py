from __future__ import annotations

from auditor.checks._dependency import SCOPE_NOTE, PackageRule
from auditor.checks.base import Invalid, Valid, notebook_example
from auditor.model import Severity


class GpuKernelPackage(PackageRule):
    code = "LK504"
    name = "gpu-kernel-package"
    severity = Severity.MAJOR
    message = "`{package}` ships {what}{where}: {support}."
    support = "it does not install or run outside NVIDIA GPUs (ROCm only through separate builds)"
    what = ("Finds dependencies on packages built around CUDA kernels that have portable replacements: flash-attn, "
            "xformers, apex, cupy / cupy-cudaNNx, mamba-ssm, causal-conv1d, flashinfer, vllm-flash-attn, "
            "onnxruntime-gpu, jax[cuda12] / jax-cuda12-plugin, tensorflow[and-cuda], nvidia-dali-*, RAPIDS "
            "(cudf-cu12, cuml-cu12, ...), mmcv-full, auto-gptq, exllamav2, FlashMLA, DeepGEMM, DeepEP, fbgemm-gpu "
            "(and -genai), liger-kernel, sgl-kernel, TileLang, Unsloth and similar; each with its own support per "
            "target (rules/packages.toml). A package only in an extra or dependency group is reported as "
            "optional.") + SCOPE_NOTE
    why = ("These packages compile or ship kernels for NVIDIA GPUs only: on other targets the install fails (source "
           "builds need nvcc) or the import raises. As a hard dependency they make the whole project NVIDIA-only, "
           "although torch or a per-target wheel covers the same need.")
    instead = ("Use the portable path and keep the CUDA package optional:\n\n```python\n"
               "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)\n```\n\n"
               "```toml\n[project.optional-dependencies]\ncuda = [\"flash-attn>=2.6\"]\n```")

    VALID = [
        Valid("# flash-attn\ntorch\neinops\n", path="requirements.txt"),
        Valid("jax\nonnxruntime\ntensorflow\ncupy-rocm-5-0\n", path="requirements.txt"),
        Valid('[project]\nname = "x"\ndescription = "flash-attn and xformers kernels"\ndependencies = ["torch"]\n',
              path="pyproject.toml"),
        Valid("deepspeed>=0.14\n", path="requirements.txt"),
        # Where CUDA-only packages belong: a CUDA requirements file or a CUDA extra.
        Valid("flash-attn>=2.6\nxformers\n", path="requirements-cuda.txt"),
        Valid('[project]\nname = "x"\n[project.optional-dependencies]\ncuda = ["flash-attn>=2.6"]\n',
              path="pyproject.toml"),
        Valid("from setuptools import setup\nimport torch\nreqs = ['numpy']\nif torch.cuda.is_available():\n"
              "    reqs.append('xformers')\nsetup(install_requires=reqs)\n", path="setup.py"),
        Valid(notebook_example(("markdown", "!pip install flash-attn"), ("code", "# !pip install flash-attn\nimport torch\n")),
              path="demo.ipynb"),
        Valid("#!/bin/bash\necho 'pip install flash-attn'\n", path="scripts/setup.sh"),
    ]
    INVALID = [
        Invalid("torch\nflash-attn>=2.5.8\n", path="requirements.txt", line=2),
        Invalid("Flash_Attn==2.6.3 ; sys_platform == 'linux'\n", path="requirements.txt", line=1),
        Invalid("xformers\n", path="constraints.txt", line=1),
        Invalid("-e git+https://github.com/NVIDIA/apex.git#egg=apex\n", path="requirements.txt", line=1),
        Invalid("cupy-cuda12x>=13\n", path="requirements.txt", line=1),
        Invalid("jax[cuda12]==0.4.30\n", path="requirements.txt", line=1),
        Invalid("tensorflow[and-cuda]\n", path="requirements.txt", line=1),
        Invalid('[project]\nname = "x"\ndependencies = ["torch"]\n\n[project.optional-dependencies]\n'
                'fast = ["xformers>=0.0.27"]\n', path="pyproject.toml", line=6),
        Invalid('[dependency-groups]\ngpu = ["mamba-ssm", {include-group = "base"}]\nbase = ["numpy"]\n',
                path="pyproject.toml", line=2),
        Invalid('[tool.poetry.group.gpu.dependencies]\nonnxruntime-gpu = "^1.18"\n', path="pyproject.toml", line=2),
        Invalid("from setuptools import setup\nEXTRAS = {'serve': ['flashinfer-python']}\n"
                "setup(name='x', extras_require=EXTRAS)\n", path="setup.py", line=2),
        Invalid("[options]\nsetup_requires = cudf-cu12\n", path="setup.cfg", line=2),
        Invalid(notebook_example(("markdown", "Install the kernels"), ("code", "!pip install -q flash-attn --no-build-isolation\nimport torch\n")),
                path="demo.ipynb", line=1),
        Invalid("#!/bin/bash\nset -e\npip install 'xformers==0.0.23' && python train.py\n", path="scripts/setup.sh", line=3),
        Invalid("torch\ntilelang==0.1.7\nquack-kernels\n", path="requirements.txt", line=2),
        Invalid("liger-kernel>=0.5\nsgl-kernel\nfbgemm-gpu-genai\nunsloth\n", path="requirements.txt", line=4),
        Invalid('[project]\nname = "x"\ndependencies = ["torch"]\n\n[project.optional-dependencies]\n'
                'fast = ["liger-kernel"]\n', path="pyproject.toml", line=6, context="optional"),
        Invalid('[dependency-groups]\ntest = ["flash-attn"]\n', path="pyproject.toml", line=2, context="optional"),
    ]
