from __future__ import annotations

import re

import libcst as cst

from auditor.checks._options import OptionRule, is_true
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity
from auditor.python.syntax import string_value
from auditor.targets import resolve

_FLASH = re.compile(r"flash_attention_(\d)")
# FlashAttention 3 and 4 are Hopper/Blackwell-only CUDA builds: no other target has a path.
_CUDA_ONLY = {"others": "raises"}


class FlashAttentionOption(OptionRule):
    code = "LK413"
    name = "flash-attention-option"
    category = Category.KERNEL
    severity = Severity.MAJOR
    subject = "`{api}`"
    message = ("`{api}` makes transformers run attention through the flash-attn CUDA kernels: without them "
               "({raising_targets}) loading the model raises.")
    suggestion = ("`attn_implementation=\"sdpa\"` (torch's scaled_dot_product_attention, which picks a flash kernel "
                  "where one exists), or choose \"flash_attention_2\" only when the device is CUDA.")
    min_torch = "2.2"
    tokens = ("flash_attention_2", "flash_attention_3", "flash_attention_4")  # not modeling_flash_attention_utils
    options = frozenset({"attn_implementation", "_attn_implementation", "attention_implementation",
                         "use_flash_attention_2"})
    what = ("Finds FlashAttention chosen through transformers / PEFT / TRL options: `attn_implementation="
            "\"flash_attention_2\"` (or 3, 4) as a keyword argument, dict entry, config attribute, dataclass or "
            "argparse default, and `use_flash_attention_2=True`.")
    why = ("transformers checks the flash-attn package and the device when the model loads: FlashAttention 2 runs "
           "on CUDA and ROCm builds (XPU through the `kernels` library), FlashAttention 3 and 4 only on NVIDIA "
           "Hopper/Blackwell. On TPU, Trainium, MPS and CPU loading raises, although SDPA gives the same results.")
    instead = ("```python\nattn = \"flash_attention_2\" if device.type == \"cuda\" else \"sdpa\"\n"
               "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=attn)\n```")

    VALID = [
        Valid("model = AutoModel.from_pretrained(name, attn_implementation='sdpa')\n"),
        Valid("model = AutoModel.from_pretrained(name, attn_implementation=args.attn_implementation)\n"),
        Valid('"""Use attn_implementation="flash_attention_2" on GPUs."""\nprint("flash_attention_2")\n'),
        Valid("if config._attn_implementation == 'flash_attention_2':\n    pass\n"),
        Valid("parser.add_argument('--attn', choices=['eager', 'sdpa', 'flash_attention_2'])\n"),
    ]
    INVALID = [
        Invalid("model = AutoModelForCausalLM.from_pretrained(name, attn_implementation='flash_attention_2')\n", line=1),
        Invalid("model = AutoModel.from_pretrained(name, use_flash_attention_2=True)\n", line=1),
        Invalid("config._attn_implementation = 'flash_attention_2'\n", line=1),
        Invalid("kwargs = {'attn_implementation': 'flash_attention_3', 'dtype': torch.bfloat16}\n", line=1),
        Invalid("parser.add_argument('--attn_implementation', default='flash_attention_2')\n", line=1),
        Invalid("if args.use_flash_attn:\n    kwargs['attn_implementation'] = 'flash_attention_2'\n", line=2,
                context="optional"),
        Invalid("import torch\nattn = 'flash_attention_2' if torch.cuda.is_available() else 'sdpa'\n"
                "model = AutoModel.from_pretrained(name, attn_implementation=attn)\n", line=2, context="guarded"),
    ]

    def chosen(self, value: cst.BaseExpression) -> str | None:
        if is_true(value):
            return "True"
        text = string_value(value)
        return f'"{text}"' if text is not None and _FLASH.fullmatch(text) else None

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression, ctx: PythonContext) -> None:
        super()._assigned(target, value, ctx)
        if isinstance(value, cst.IfExp):  # attn = "flash_attention_2" if cuda else "sdpa"
            for branch in (value.body, value.orelse):
                choice = self.chosen(branch)
                if choice is not None and not is_true(branch):
                    self.report_choice(branch, "attn_implementation", choice, ctx)

    def report_choice(self, node: cst.CSTNode, option: str, choice: str, ctx: PythonContext) -> None:
        version = _FLASH.search(choice)
        extra = {"__effects": resolve(_CUDA_ONLY)} if version and version.group(1) != "2" else {}
        ctx.report(self, node, api=f"{option}={choice}", **extra)
