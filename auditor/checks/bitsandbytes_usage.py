from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class BitsandbytesUsage(KernelApiRule):
    code = "LK410"
    name = "bitsandbytes-usage"
    category = Category.KERNEL
    severity = Severity.MINOR
    message = ("`{api}`: bitsandbytes has its own kernels on {nvidia_and_working_targets} (0.50 wheels bundle them), "
               "slower or partial ones on {degrading_targets} and no backend for {raising_targets}; not every kernel "
               "exists everywhere.")
    suggestion = "Check the kernels used and {replacement}."
    what = ("Finds import lines of `bitsandbytes` (`import bitsandbytes as bnb`, `from bitsandbytes.optim import "
            "AdamW8bit`, ...), also inside try/except, and the layers and optimizers it builds, through any alias "
            "(`bnb.nn.Linear4bit(...)`, `bnb.optim.PagedAdamW(...)`). Other uses (`isinstance(m, bnb.nn.Linear8bitLt)`) "
            "are not reported one by one.")
    why = ("The bitsandbytes 0.50 Linux wheel bundles CPU, CUDA, ROCm and XPU libraries and registers MPS kernels, "
           "but older versions load only CUDA, not every kernel (paged and 8-bit optimizers, LLM.int8, NF4) exists "
           "on every backend, and there is none for TPU (XLA) or Trainium (Neuron): a model quantized with it cannot "
           "live there.")
    instead = ("Require the multi-backend release (`bitsandbytes>=0.50`) and check each kernel the code uses on each "
               "target; for portable quantization consider torchao (`quantize_(model, Int8WeightOnlyConfig())`).")

    VALID = [
        Valid('"""Load in 8-bit with bitsandbytes."""\n# import bitsandbytes as bnb\nprint("pip install bitsandbytes")\n'),
        Valid("from transformers import BitsAndBytesConfig\ncfg = BitsAndBytesConfig(load_in_4bit=True)\n"),
    ]
    INVALID = [
        Invalid("import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(params)\n", line=1),
        Invalid("import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(params)\n", line=2),
        Invalid("from peft.import_utils import is_bnb_available\nimport bitsandbytes as b\n"
                "layer = b.nn.Linear4bit(16, 16, compute_dtype=torch.bfloat16)\n", line=3),
        Invalid("from bitsandbytes.optim import PagedAdamW\n", line=1),
        Invalid("try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\n", line=2),
    ]
