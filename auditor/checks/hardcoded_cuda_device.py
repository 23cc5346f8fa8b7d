from __future__ import annotations

from functools import lru_cache

import libcst as cst

from auditor import targets
from auditor.catalogue import load_catalogue
from auditor.checks._device_fix import device_fix
from auditor.checks._values import ValueFlowRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import PythonContext
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity
from auditor.python.syntax import DEVICE_WORD, is_cuda_device, keyword, positional, string_value

_PIN_METHODS = ("pin_memory", "is_pinned")
_MESH = ("torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh",
         "torch.distributed.device_mesh.DeviceMesh")


class HardcodedCudaDevice(ValueFlowRule):
    fields = frozenset({"literal"})
    code = "LK101"
    name = "hardcoded-cuda-device"
    category = Category.DEVICE
    severity = Severity.MAJOR
    subject = "The device {literal}"
    message = "Device hard-coded to {literal}: it raises on {raising_targets}."
    suggestion = ("Choose the device once, e.g. `DEVICE = torch.accelerator.current_accelerator(check_available=True) "
                  "or torch.device(\"cpu\")`, and pass DEVICE here.")
    min_torch = "2.7"
    tokens = ("cuda",)
    role = DEVICE_WORD
    what = ('Finds "cuda", "cuda:N" and f"cuda:{rank}" strings where they choose a device: `torch.device(...)`, '
            "`.to(...)`, `device=`/`map_location=`/`device_map=`/`device_type=` arguments, argument defaults and "
            "`choices=`, "
            "and variables, attributes, dict entries or parameters that feed them. Mixed precision pinned to "
            "\"cuda\" (`torch.autocast(\"cuda\")`, `GradScaler(\"cuda\")`) is LK106: it turns AMP off elsewhere "
            "instead of raising. A comparison only counts where it makes the code fail off CUDA: "
            "`assert x.device.type == \"cuda\"`, `if dev != \"cuda\": raise ...`.")
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
        Valid('if x.device.type != "cuda":\n    x = x.float()\n'),
        Valid("import torch\nmodel.to(device)\nx = torch.zeros(3, device=dev)\n"),
        Valid('import torch\nx = torch.device("cpu")\nmodel.to("mps")\n'),
        Valid('name = "cuda"\nprint(name)\n'),
        # AMP pinned to CUDA turns off elsewhere instead of raising: cuda-autocast-device (LK106)
        Valid('import torch\nwith torch.autocast(device_type="cuda"):\n    pass\n'),
        Valid('import torch\nwith torch.amp.autocast("cuda"):\n    pass\n'),
        Valid('supported_devices = ("xpu", "cuda", "npu", "mps")\n'),
        # a local whose name says "device" but which is only compared against: the device a value is checked for
        Valid('def count(memory):\n    if is_mps_available():\n        expected_device = "mps"\n    else:\n'
              '        expected_device = "cuda"\n    return [d for d in memory if torch.device(d).type == expected_device]\n'),
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
        Invalid('model = AutoModel.from_pretrained(name, device_map="cuda:0")\n'),
        Invalid('class Cfg:\n    device: str = "cuda"\n', line=2),
        Invalid('def get_device():\n    return "cuda"\n', line=2),
        Invalid('import torch\nmodel.to(args.device or "cuda")\n', line=2),  # a fallback: optional, not main
        # traps: the same local also passed on, or shared with the module (global), is a device choice
        Invalid('def f(x):\n    device = "cuda"\n    if x.device.type != device:\n        x = x.to(device)\n    return x\n',
                line=2),
        Invalid('def f(x):\n    global device\n    device = "cuda"\n    return x.device.type == device\n', line=3),
        # Fixes (F07, F08 safe; F26 unsafe, only in a CUDA-clean file). Any other "cuda" needs a central device.
        Invalid('from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True, pin_memory_device="cuda")\n'
                "t = t.pin_memory('cuda')\n", line=2, fix_class="safe",
                fixed="from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\nt = t.pin_memory()\n"),
        # A plain scan offers F26 (unsafe, gated) for a mesh; `audit --fix` knows the project's device (here it
        # creates device_choice.py beside the script) and applies F41 (safe): a device type where one is taken.
        Invalid('from torch.distributed.device_mesh import init_device_mesh\nmesh = init_device_mesh("cuda", (8,))\n',
                line=2, fix_class="unsafe",
                fixed='from torch.distributed.device_mesh import init_device_mesh\nfrom device_choice import get_device\n'
                      'mesh = init_device_mesh(get_device().type, (8,))\n'),
        Invalid('import torch\nmodel.to("cuda")\nt = t.pin_memory("cuda:1")\n', line=2,
                fixed='import torch\nfrom device_choice import get_device\nmodel.to(get_device())\n'
                      't = t.pin_memory("cuda:1")\n'),
        # ... `pin_memory_device=` of a callee that is not torch's DataLoader: the project's own parameter.
        Invalid('from .data import make_loader\nloader = make_loader(ds, pin_memory_device="cuda")\n', line=2,
                fixed=UNCHANGED),
        Invalid('import torch\nclass Loader(torch.utils.data.DataLoader):\n    pass\n'
                'loader = Loader(ds, pin_memory_device="cuda")\n', line=4, fixed=UNCHANGED),
        # requirements: the code fails unless the device is CUDA
        Invalid('assert self.qweight.device.type == "cuda"\n', line=1),
        Invalid('if x.device.type != "cuda":\n    raise ValueError("needs a CUDA tensor")\n', line=1),
    ]

    # -- requirements: `assert x.device.type == "cuda"`, `if dev != "cuda": raise ...` ------------------
    def visit_Assert(self, node: cst.Assert, ctx: PythonContext) -> None:
        self._required(node.test, (cst.Equal, cst.In), ctx)

    def visit_If(self, node: cst.If, ctx: PythonContext) -> None:
        body = node.body.body
        first = body[0] if body else None
        if isinstance(first, cst.SimpleStatementLine) and first.body and isinstance(first.body[0], cst.Raise):
            self._required(node.test, (cst.NotEqual, cst.NotIn), ctx)

    def _required(self, test: cst.BaseExpression, operators: tuple[type, ...], ctx: PythonContext) -> None:
        """A comparison that makes the code fail unless the device is CUDA."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return
        target = test.comparisons[0]
        if not isinstance(target.operator, operators):
            return
        for side in (test.left, target.comparator):
            if is_cuda_device(side):
                self.report_value(side, ctx)

    # -- device positions in calls -------------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        table = ctx.catalogue.table("device")
        if ctx.qualify(node.func) in table.get("amp_functions", {}):
            return  # autocast("cuda") turns AMP off elsewhere: cuda-autocast-device (LK106)
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
        elif isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
            self._device_value(value.left, ctx)  # `args.device or "cuda"`: the fallback is a device too
            self._device_value(value.right, ctx)
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
        if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
            return [*self.values_in(value.left, ctx), *self.values_in(value.right, ctx)]
        if isinstance(value, (cst.List, cst.Tuple)):
            if any(_other_device(e.value) for e in value.elements):
                return []  # ("xpu", "cuda", "mps"): the devices something supports, not a choice
            return [e.value for e in value.elements if is_cuda_device(e.value)]
        return [value] if is_cuda_device(value) else []

    FIXES = (
        FixSpec("F41", "safe", '`torch.device("cuda")` / `.to("cuda")` / `device="cuda"` / `map_location="cuda:0"` -> '
                "`get_device()` / `device_at(0)`: the project's one device choice (audit --fix finds or creates it); "
                '`device = "cuda"` stored or passed on -> `get_device().type` (the same string on NVIDIA); unsafe '
                "through a helper of the project's own", device_owner=True),
        FixSpec("F07", "safe", '`DataLoader(..., pin_memory_device="cuda")` -> the argument dropped (from 2.7 pinning '
                "targets the current accelerator; from 2.9 the argument is ignored)", "2.7"),
        FixSpec("F08", "safe", '`t.pin_memory("cuda")` / `t.is_pinned("cuda")` -> `t.pin_memory()` / `t.is_pinned()` '
                "(the device argument is deprecated; the default is the accelerator)"),
        FixSpec("F26", "unsafe", '`init_device_mesh("cuda", ...)` -> `init_device_mesh((torch.accelerator.'
                'current_accelerator() or torch.device("cpu")).type, ...)`', "2.7", gated=True),
    )

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """Two places where "cuda" can go without knowing where the program's device comes from
        (`pin_memory_device=`, `.pin_memory("cuda")`); every other one goes to the project's device
        (audit --fix), or, in a plain scan, `init_device_mesh("cuda")` to the accelerator's type."""
        node = report.node
        pinned = self._pinning(node, rewriter) if string_value(node) == "cuda" and _may_hold_fixable(rewriter) else None
        if pinned is not None:
            return pinned
        owned = device_fix(node, rewriter) if rewriter.device_known() else None
        if owned is not None and owned.applicability != "display":
            return owned
        if string_value(node) != "cuda" or not _may_hold_fixable(rewriter):
            return owned  # most files have none of these calls: spare them the parent map
        return self._mesh(node, rewriter) or owned  # where the project's device is out of reach: F26 as before

    def _pinning(self, node: cst.CSTNode, rewriter: Rewriter) -> FixPlan | None:
        arg = rewriter.parent(node)
        call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call):
            return None
        keyword_name = arg.keyword.value if arg.keyword is not None else None
        if keyword_name == "pin_memory_device":
            owners = rewriter.ctx.catalogue.table("device").get("pin_memory_owners", ())
            if rewriter.ctx.qualify(call.func) not in owners:
                return FixPlan.held("not removed: the callee is not torch's DataLoader (a function or subclass of "
                                    "the project's own may mean something else by `pin_memory_device=`)", "F07")
            return FixPlan("safe", "Remove `pin_memory_device=`: pinning follows the current accelerator",
                           [rewriter.remove_arg(call, arg)], "2.7", fix_id="F07")
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if method in _PIN_METHODS and (keyword_name == "device" or (keyword_name is None and call.args[0] is arg)) \
                and len(call.args) == 1:
            return FixPlan("safe", f"Remove the device argument: `.{method}()` uses the current accelerator",
                           [rewriter.remove_arg(call, arg)], None, fix_id="F08")
        return None

    def _mesh(self, node: cst.CSTNode, rewriter: Rewriter) -> FixPlan | None:
        arg = rewriter.parent(node)
        call = rewriter.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call):
            return None
        if arg.keyword is None and call.args[0] is arg and rewriter.ctx.qualify(call.func) in _MESH:
            accelerator, device = rewriter.name_for("torch.accelerator"), rewriter.name_for("torch.device")
            if accelerator is None or device is None:
                return None
            text = f'({accelerator[0]}.current_accelerator() or {device[0]}("cpu")).type'
            imports = [*accelerator[1], *(e for e in device[1] if e.content not in {i.content for i in accelerator[1]})]
            return FixPlan("unsafe", f"Replace with `{text}`", [rewriter.replace(node, text), *imports], "2.7",
                           gated=True, fix_id="F26")
        return None


def _may_hold_fixable(rewriter: Rewriter) -> bool:
    state = rewriter.ctx.state
    if "LK101:fixable" not in state:
        text = rewriter.ctx.text
        state["LK101:fixable"] = any(word in text for word in ("pin_memory", "is_pinned", "DeviceMesh", "device_mesh"))
    return state["LK101:fixable"]


@lru_cache(maxsize=1)
def _other_devices() -> frozenset[str]:
    """Device types other than CUDA: every target's own (rules/targets.toml `device`) and those of the
    devices outside the targets (rules/device.toml `other_devices`)."""
    devices = {t.device for t in targets.registry().targets if t.device} - {"cuda"}
    return frozenset(devices) | frozenset(load_catalogue().table("device").get("other_devices", ()))


def _other_device(node: cst.BaseExpression) -> bool:
    value = string_value(node)
    return value is not None and value.split(":", 1)[0].lower() in _other_devices()
