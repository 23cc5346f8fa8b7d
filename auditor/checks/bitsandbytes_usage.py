from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class BitsandbytesUsage(KernelApiRule):
    code = "LK410"
    name = "bitsandbytes-usage"
    category = Category.KERNEL
    severity = Severity.MINOR
    message = "`{api}`: bitsandbytes was CUDA-only until its multi-backend releases, and some kernels still are."
    suggestion = "Check the kernels used and {replacement}."
    what = ("Finds import lines of `bitsandbytes` (`import bitsandbytes as bnb`, `from bitsandbytes.optim import "
            "AdamW8bit`, ...), also inside try/except. Uses are not reported one by one.")
    why = ("Recent bitsandbytes wheels bundle CPU, ROCm and XPU libraries next to the CUDA ones, but older versions "
           "load only CUDA, and not every kernel (paged and 8-bit optimizers, LLM.int8, NF4) exists on every "
           "backend; TPU and Trainium have none. The code runs, but may fall back or fail per kernel.")
    instead = ("Require a multi-backend release (e.g. `bitsandbytes>=0.48`) and check each kernel the code uses on each "
               "target; for portable quantization consider torchao (`quantize_(model, Int8WeightOnlyConfig())`).")

    VALID = [
        Valid('"""Load in 8-bit with bitsandbytes."""\n# import bitsandbytes as bnb\nprint("pip install bitsandbytes")\n'),
        Valid("from transformers import BitsAndBytesConfig\ncfg = BitsAndBytesConfig(load_in_4bit=True)\n"),
    ]
    INVALID = [
        Invalid("import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(params)\n", line=1),
        Invalid("from bitsandbytes.optim import PagedAdamW\n", line=1),
        Invalid("try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\n", line=2),
    ]
