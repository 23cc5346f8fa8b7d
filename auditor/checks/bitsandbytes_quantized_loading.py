from __future__ import annotations

import libcst as cst

from auditor.checks._options import OptionRule, is_true
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class BitsandbytesQuantizedLoading(OptionRule):
    code = "LK412"
    name = "bitsandbytes-quantized-loading"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    subject = "`{api}`"
    message = ("`{api}` loads the model quantized with bitsandbytes: there is no bitsandbytes backend for "
               "{raising_targets}, so the model cannot be loaded that way there ({degrading_targets}: slower or "
               "partial kernels).")
    suggestion = ("Make the quantization a per-target choice: bitsandbytes>=0.50 where it has kernels "
                  "({nvidia_and_working_targets}), torchao elsewhere (`TorchAoConfig(Int8WeightOnlyConfig())`), or no "
                  "quantization on hardware with enough memory.")
    tokens = ("load_in_8bit", "load_in_4bit", "bitsandbytesconfig(")  # a call: not a name in a lazy-import table
    options = frozenset({"load_in_8bit", "load_in_4bit"})
    calls = frozenset({"BitsAndBytesConfig"})
    what = ("Finds bitsandbytes quantization chosen through transformers, accelerate, diffusers or PEFT: "
            "`load_in_8bit=True` / `load_in_4bit=True` (as keyword arguments, dict entries, config or dataclass "
            "defaults), and every `BitsAndBytesConfig(...)`. Passing a variable (`load_in_4bit=args.load_in_4bit`) "
            "is a user's choice, not a hard-wired one, and is not reported; code under a test of that option "
            "(`if args.load_in_4bit:`) is reported as optional.")
    why = ("transformers hands these models to bitsandbytes. Its 0.50 wheels have CPU, CUDA, ROCm and XPU kernels "
           "and partial MPS ones, but nothing for XLA or Neuron: on TPU and Trainium the quantized model cannot be "
           "placed on the device at all. A script that always loads in 8 or 4 bit is tied to the GPUs "
           "bitsandbytes supports, and moving it means choosing and validating another quantization scheme.")
    instead = ("```python\nif device.type in (\"cuda\", \"xpu\", \"cpu\"):\n"
               "    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)\n"
               "else:\n    quant = TorchAoConfig(Int8WeightOnlyConfig())\n"
               "model = AutoModelForCausalLM.from_pretrained(name, quantization_config=quant)\n```")

    VALID = [
        Valid("model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=args.load_in_8bit)\n"),
        Valid('"""Pass load_in_8bit=True to save memory."""\n# model = from_pretrained(name, load_in_4bit=True)\n'
              'print("load_in_4bit=True is not supported here")\n'),
        Valid("cfg = {'load_in_8bit': False}\nload_in_4bit: bool = False\n"),
        Valid("from transformers import TorchAoConfig\nquant = TorchAoConfig('int8_weight_only')\n"),
    ]
    INVALID = [
        Invalid("from transformers import AutoModelForCausalLM\n"
                "model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True, device_map='auto')\n", line=2),
        Invalid("from transformers import BitsAndBytesConfig\nq = BitsAndBytesConfig(load_in_4bit=True, "
                "bnb_4bit_quant_type='nf4')\n", line=2),
        Invalid("model_kwargs = {'load_in_4bit': True, 'torch_dtype': 'auto'}\n", line=1),
        Invalid("from dataclasses import dataclass\n\n@dataclass\nclass Args:\n    load_in_8bit: bool = True\n", line=5),
        Invalid("import transformers\nq = transformers.BitsAndBytesConfig(load_in_8bit=args.load_in_8bit)\n", line=2),
        Invalid("from transformers import BitsAndBytesConfig\nif args.load_in_4bit:\n"
                "    q = BitsAndBytesConfig(load_in_4bit=True)\n", line=3, context="optional"),
    ]

    def chosen(self, value: cst.BaseExpression) -> str | None:
        return "True" if is_true(value) else None
