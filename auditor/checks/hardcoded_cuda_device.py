from __future__ import annotations

import libcst as cst

from auditor.checks._helpers import DEVICE_WORD, is_cuda_device, keyword, positional
from auditor.checks._values import ValueFlowRule
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext
from auditor.model import Category, Severity


class HardcodedCudaDevice(ValueFlowRule):
    code = "LK101"
    name = "hardcoded-cuda-device"
    category = Category.DEVICE
    severity = Severity.MAJOR
    message = "Device hard-coded to {literal}: raises on every accelerator that is not NVIDIA or AMD."
    suggestion = ("Choose the device once, e.g. `DEVICE = torch.accelerator.current_accelerator(check_available=True) "
                  "or torch.device(\"cpu\")`, and pass DEVICE here.")
    min_torch = "2.7"
    tokens = ("cuda",)
    role = DEVICE_WORD
    what = ('Finds "cuda", "cuda:N" and f"cuda:{rank}" strings where they choose a device: `torch.device(...)`, '
            "`.to(...)`, `device=`/`map_location=`/`device_map=`/`device_type=` arguments, argument defaults and "
            "`choices=`, "
            "and variables, attributes, dict entries or parameters that feed them.")
    why = ("ROCm accepts \"cuda\", but TPU, Trainium, MPS, XPU and CPU builds raise at the first allocation "
           "(\"Torch not compiled with CUDA enabled\"). Scattered device strings are the most common reason a "
           "PyTorch app cannot move: every one of them must be found and changed.")
    instead = ("Decide the device in one place and pass it around:\n\n"
               "```python\nDEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")\n"
               "model.to(DEVICE)\nbatch = torch.zeros(8, device=DEVICE)\n```\n\n"
               "On torch 2.6 use `torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
               "else torch.device(\"cpu\")`; for one device per rank, `torch.device(DEVICE.type, local_rank)`.")

    VALID = [
        Valid('print("running on cuda")\nlogger.info("cuda is used")\n'),
        Valid('"""Moves the model to cuda."""\n# model.to("cuda")\n'),
        Valid('if device.type == "cuda":\n    pass\nassert str(dev) != "cuda:0"\n'),
        Valid("import torch\nmodel.to(device)\nx = torch.zeros(3, device=dev)\n"),
        Valid('import torch\nx = torch.device("cpu")\nmodel.to("mps")\n'),
        Valid('name = "cuda"\nprint(name)\n'),
    ]
    INVALID = [
        Invalid('import torch\nmodel.to("cuda")\n', line=2),
        Invalid('import torch\nx = torch.zeros(3, device="cuda:0")\n', line=2),
        Invalid('import torch as th\ndev = th.device("cuda")\n', line=2),
        Invalid('import torch\nx = torch.ones(2).to(f"cuda:{rank}")\n', line=2),
        Invalid('import torch\nstate = torch.load(path, map_location="cuda")\n', line=2),
        Invalid('DEVICE = "cuda"\n'),
        Invalid('import torch\ndev = "cuda:1"\nmodel.to(dev)\n', line=2),
        Invalid('def run(model, device="cuda"):\n    return model.to(device)\n', line=1),
        Invalid('config = {"device": "cuda"}\n'),
        Invalid('parser.add_argument("--device", default="cuda")\n'),
        Invalid('parser.add_argument("--device", choices=["cuda:0", "cuda:1"])\n'),
        Invalid('import torch\nwith torch.autocast(device_type="cuda"):\n    pass\n', line=2),
        Invalid('import torch\nwith torch.amp.autocast("cuda"):\n    pass\n', line=2),
        Invalid('model = AutoModel.from_pretrained(name, device_map="cuda:0")\n'),
        Invalid('class Cfg:\n    device: str = "cuda"\n', line=2),
        Invalid('def get_device():\n    return "cuda"\n', line=2),
    ]

    # -- device positions in calls -------------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        table = ctx.catalogue.table("device")
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in table.get("device_keywords", ()):
                self._device_value(arg.value, ctx)
        func = node.func
        index = None
        if isinstance(func, cst.Attribute) and func.attr.value in table.get("device_methods", {}):
            index = table["device_methods"][func.attr.value]
        else:
            qualified = ctx.qualify(func)
            if qualified is not None:
                index = table.get("device_functions", {}).get(qualified)
        if index is not None:
            arg = positional(node, index)
            if arg is not None:
                self._device_value(arg.value, ctx)
        default = keyword(node, "default")
        if default is not None and is_cuda_device(default.value):
            self.report_value(default.value, ctx)
        choices = keyword(node, "choices")  # argparse/click: the devices a user may pick
        if choices is not None and isinstance(choices.value, (cst.List, cst.Tuple, cst.Set)):
            for element in choices.value.elements:
                if is_cuda_device(element.value):
                    self.report_value(element.value, ctx)

    def _device_value(self, value: cst.BaseExpression, ctx: PythonContext) -> None:
        if isinstance(value, (cst.Name, cst.Attribute)):
            self.mark_used(value, ctx)
        elif isinstance(value, cst.IfExp):
            self._device_value(value.body, ctx)
            self._device_value(value.orelse, ctx)
        elif isinstance(value, cst.Dict):
            for element in value.elements:
                if isinstance(element, cst.DictElement):
                    self._device_value(element.value, ctx)
        elif is_cuda_device(value):
            self.report_value(value, ctx)

    def report_value(self, node: cst.CSTNode, ctx: PythonContext) -> None:
        ctx.report(self, node, literal=ctx.module.code_for_node(node)[:40])

    # -- values that feed a device position (stored, returned, passed later: see ValueFlowRule) --
    def values_in(self, value: cst.BaseExpression, ctx: PythonContext) -> list[cst.BaseExpression]:
        if isinstance(value, cst.IfExp):
            return [*self.values_in(value.body, ctx), *self.values_in(value.orelse, ctx)]
        if isinstance(value, (cst.List, cst.Tuple)):
            return [e.value for e in value.elements if is_cuda_device(e.value)]
        return [value] if is_cuda_device(value) else []
