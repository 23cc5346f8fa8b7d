"""An int where torch takes a device (`model.to(gpu_id)`, `device=0`, `torch.device(rank)`, DDP's
`device_ids=[rank]`): since torch 2.5 an int is an index of the current accelerator (before, of
CUDA), so on a machine without one it raises "Cannot access accelerator device when none is
available" (checked with the CPU wheel), and DistributedDataParallel of a CPU module rejects any
`device_ids` / `output_device` (ValueError).

A value is an int when it is an int literal, `int(...)`, a call the catalogue says returns one
(rules/device.toml `int_functions`: `dist.get_rank()`), arithmetic of those, a parameter annotated
`int`, an argparse option declared `type=int`, or a name or `self.` attribute every binding of
which in the file is one of those. The finding is at the use, where the fix writes the project's
device (`device_at(i)`), so that every other use of the index (an f-string, `rank == 0`) keeps it."""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from auditor.checks._device_fix import index_device_fix
from auditor.checks._values import ValueFlowRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.context import PythonContext
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity
from auditor.python.syntax import keyword, string_value

STATE = "LK107"
_OTHER = "other"  # a binding whose value is not known to be an int
_DDP_KEYWORDS = ("device_ids", "output_device")


def _key(node: cst.BaseExpression) -> str | None:
    """What a value is known by in this file: `x`, `self.x` (also `cls.x`), `args.x`."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        owner = "self" if node.value.value in ("self", "cls") else node.value.value
        return f"{owner}.{node.attr.value}"
    return None


@lru_cache(maxsize=4)
def _last_names(qualified: tuple[str, ...]) -> frozenset[str]:
    return frozenset(name.rsplit(".", 1)[-1] for name in qualified)


def _is_int_annotation(annotation: cst.Annotation | None) -> bool:
    return annotation is not None and isinstance(annotation.annotation, cst.Name) \
        and annotation.annotation.value == "int"


class IntDeviceIndex(ValueFlowRule):
    fields = frozenset({"index", "problem"})
    code = "LK107"
    name = "int-device-index"
    category = Category.DEVICE
    severity = Severity.MAJOR
    subject = "The int device {index}"
    message = "{problem}: it raises on {raising_targets}."
    suggestion = ("Pass a device, not an index: `torch.device(DEVICE.type, {index})` with DEVICE chosen once "
                  "(`torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")`); "
                  "DistributedDataParallel of a CPU module takes `device_ids=None`.")
    min_torch = "2.7"
    # What an int device is made of in practice (a file without any is not parsed for this rule): a
    # literal index, DDP's device_ids, a local rank, a GPU id, a spawned worker, a `type=int` option.
    tokens = ("device_i", "local_rank", "gpu_id", "get_rank", ".to(0", ".to(1", "device=0", "device=1", "device = 0",
              "device = 1", "device(0", "device(1", "spawn", "type=int")
    what = ("Finds an int where torch takes a device: `.to(i)`, `device=i` of torch functions and of "
            "`.to()` / `.new_*()`, `torch.device(i)`, `torch.set_default_device(i)`, `torch.Generator(i)`, and "
            "DistributedDataParallel's `device_ids=[i]` / `output_device=i`. An int is a literal, `int(...)`, "
            "`dist.get_rank()` and other catalogue calls returning one, arithmetic of those, a parameter "
            "annotated `int`, an argparse option with `type=int`, or a name or `self.` attribute bound only "
            "to such values in the file (`self.gpu_id = int(os.environ[\"LOCAL_RANK\"])`). Not reported: "
            "`map_location=i` (torch.load takes no int anywhere: a TypeError on every machine) and "
            "DataParallel (it ignores `device_ids` without an accelerator; data-parallel, LK315, covers it).")
    why = ("An int device is an index of the current accelerator (torch 2.5 and later; before, of CUDA, which "
           "raised on XPU and MPS as well). Where the script was written that is a CUDA GPU; ROCm, XPU, MPS and "
           "the PrivateUse1 backends take it as their own index, but a machine without an accelerator raises "
           "at the first use (\"Cannot access accelerator device when none is available\"), and "
           "DistributedDataParallel of a CPU module raises on any `device_ids`. Nothing in the code says "
           "\"cuda\", so a search for it misses these.")
    instead = ("Keep the index, pass a device built from the one device choice:\n\n"
               "```python\nDEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")\n"
               "model.to(torch.device(DEVICE.type, gpu_id))\n"
               "model = DDP(model, device_ids=[gpu_id] if DEVICE.type != \"cpu\" else None)\n```")

    VALID = [
        Valid('import torch\nx = x.to(torch.float16)\ny = y.to(dtype)\nz = z.to(other)\nw = w.to(non_blocking=True)\n'),
        Valid("import torch\nmodel.to(device)\nx = torch.zeros(3, device=dev)\n"),  # the device is not known
        Valid('import torch\nitem = batch[0]\nfor i in range(4):\n    pass\nx = torch.device("cpu", 0)\n'),
        Valid('# model.to(0)\n"""x.to(0) moves it to the first GPU"""\nprint("model.to(0)")\n'),
        Valid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
              "model = DDP(model, device_ids=None)\n"),
        # a name bound to an int and to something else: not known to be an int
        Valid("import torch\ndevice = 0\nif args.cpu:\n    device = torch.device('cpu')\nmodel.to(device)\n"),
        Valid("import torch\nfor device in devices:\n    x.to(device)\ndevice = 0\n"),
        # a parameter is not known to be an int (unless spawned and only ever called with one)
        Valid("import torch\ndef place(x, dev):\n    return x.to(dev)\nplace(t, 0)\n"),
        Valid("import torch\nimport torch.multiprocessing as mp\ndef work(gpu, args):\n    x.to(gpu)\n"
              "mp.spawn(work, nprocs=2)\nwork(args.gpu, args)\n"),
        # torch.load takes no int map_location anywhere (TypeError on every machine): not lock-in
        Valid("import torch\nstate = torch.load(path, map_location=0)\n"),
        # DataParallel ignores device_ids without an accelerator: data-parallel (LK315)
        Valid("import torch\nnet = torch.nn.DataParallel(net, device_ids=[0, 1], output_device=0)\n"),
        # a project's own function: its `device=` is its own
        Valid("from .models import build\nmodel = build(device=0)\n"),
        Valid("import torch\nx = x.to(rank == 0)\ny = torch.zeros(2, device=i)\ndef f(i: str):\n    pass\n"),
        # the index of the current device raises by itself without an accelerator; a CUDA API's int is its rule's
        Valid("import torch\ni = torch.accelerator.current_device_index()\nx = torch.zeros(2, device=i)\n"
              "s = torch.cuda.Stream(device=0)\n"),
    ]
    INVALID = [
        Invalid("import torch\nmodel.to(0)\n", line=2),
        Invalid("import torch\nx = torch.zeros(3, device=0)\n", line=2),
        Invalid("import torch as th\ndev = th.device(1)\n", line=2),
        Invalid("import torch\ndef run(model, gpu_id: int):\n    return model.to(gpu_id)\n", line=3),
        Invalid('import os\nimport torch\nclass T:\n    def __init__(self, model):\n'
                '        self.gpu_id = int(os.environ["LOCAL_RANK"])\n        self.model = model.to(self.gpu_id)\n'
                '        print(f"[GPU{self.gpu_id}]")\n', line=6),
        Invalid("import torch\nclass T:\n    def __init__(self, model, gpu_id: int):\n        self.gpu_id = gpu_id\n"
                "    def step(self, x):\n        return x.to(self.gpu_id)\n", line=6),
        Invalid("import torch\nimport torch.distributed as dist\nrank = dist.get_rank()\n"
                "device_id = rank % torch.cuda.device_count()\nmodel = model.to(device_id)\n", line=5),
        Invalid('import argparse\nimport torch\nparser = argparse.ArgumentParser()\n'
                'parser.add_argument("--local_rank", type=int, default=0)\nargs = parser.parse_args()\n'
                "model.to(args.local_rank)\n", line=6),
        Invalid("from torch.nn.parallel import DistributedDataParallel as DDP\nrank = 0\n"
                "model = DDP(model, device_ids=[rank], output_device=rank)\n", line=3),
        # the `device = 0  # shorthand for cuda:0` of pytorch/examples
        Invalid("import torch\ndevice = 0  # shorthand for cuda:0\nmodel.to(device)\n", line=3),
        Invalid("import torch\ndevice = 1\nmodel.to(device)\n", line=3),  # no "cuda" anywhere: the rule's own tokens
        Invalid("import torch\nt = torch.ones(2).to(device=0)\n", line=2),
        Invalid("import torch\nif torch.cuda.is_available():\n    t = t.to(0)\n", line=3, context="guarded"),
        # the process index torch.multiprocessing.spawn passes to its function (DDP tutorials)
        Invalid("import torch\nimport torch.multiprocessing as mp\ndef demo(rank, world_size):\n"
                "    model = Net().to(rank)\nmp.spawn(demo, args=(2,), nprocs=2)\n", line=4),
        # Fix (F44): with --fix, which knows the project's device (here it creates device_choice.py).
        Invalid("import torch\nx = torch.zeros(3, device=0)\ny = torch.device(1)\n", line=2,
                fixed="import torch\nfrom device_choice import device_at\nx = torch.zeros(3, device=device_at(0))\n"
                      "y = device_at(1)\n"),
        Invalid("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                "def wrap(model, gpu_id: int):\n    return DDP(model.to(gpu_id), device_ids=[gpu_id])\n", line=4,
                fixed="import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                      "from device_choice import device_at\nfrom device_choice import get_device\n"
                      "def wrap(model, gpu_id: int):\n    return DDP(model.to(device_at(gpu_id)), device_ids=[gpu_id] "
                      "if get_device().type != \"cpu\" else None)\n"),
        # ... unsafe where evaluated at import (a class attribute: the device is probed then) ...
        Invalid("import torch\nclass Cfg:\n    device = torch.device(0)\n", line=3,
                fixed="from device_choice import device_at\nclass Cfg:\n    device = device_at(0)\n"),
        # ... and test code is left as it is (`--fix-tests` rewrites it too).
        Invalid("import torch\ndef test_to():\n    assert torch.ones(1).to(0).sum() == 1\n", path="tests/test_to.py",
                line=3, context="test", fixed=UNCHANGED),
    ]

    FIXES = (
        FixSpec("F44", "safe", "`.to(gpu_id)` / `device=0` / `torch.device(i)` -> `device_at(gpu_id)` / "
                "`device_at(0)` / `device_at(i)` (the project's device at that index: `cuda:i` on NVIDIA); DDP "
                "`device_ids=[i]` / `output_device=i` -> `... if get_device().type != \"cpu\" else None`; unsafe "
                "through a helper of the project's own or where evaluated at import", device_owner=True),
    )

    # -- the walk: bindings of names, and the values in device positions ------------------------
    def begin(self, ctx: PythonContext) -> None:
        # key -> what each binding is (an expression, "int", or _OTHER); values in device positions, with
        # the keyword they are passed as
        ctx.state[STATE] = ({}, [])
        # functions: name -> their first parameters; calls: name -> the first argument of each plain call
        # (None: not positional); spawned: names passed to torch.multiprocessing.spawn
        ctx.state[STATE + ":spawn"] = ({}, {}, set())

    def values_in(self, value: cst.BaseExpression, ctx: PythonContext) -> list[cst.BaseExpression]:
        return [value]  # every binding is kept: whether it is an int is decided once the file is walked

    def _bind(self, key: str | None, value: cst.BaseExpression | str, ctx: PythonContext) -> None:
        if key is not None:
            ctx.state[STATE][0].setdefault(key, []).append(value)

    def _unknown(self, target: cst.BaseExpression, ctx: PythonContext) -> None:
        """Every name bound by `target` (a loop variable, an unpacked tuple) is not known to be an int."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._unknown(element.value, ctx)
        elif isinstance(target, cst.StarredElement):
            self._unknown(target.value, ctx)
        else:
            self._bind(_key(target), _OTHER, ctx)

    def _stored(self, target: cst.CSTNode, value: cst.BaseExpression | None, ctx: PythonContext) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            self._unknown(target, ctx)
        elif value is not None:
            self._bind(_key(target), value, ctx)

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx: PythonContext) -> None:
        self._bind(_key(node.target), "int" if _is_int_annotation(node.annotation) else node.value or _OTHER, ctx)

    def visit_Param(self, node: cst.Param, ctx: PythonContext) -> None:
        if _is_int_annotation(node.annotation):
            self._bind(node.name.value, "int", ctx)
        elif node.annotation is None and isinstance(node.default, cst.Integer):
            self._bind(node.name.value, node.default, ctx)  # `def main(local_rank=0)`
        else:
            self._bind(node.name.value, node, ctx)  # an int when the function is spawned (see finish)

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: PythonContext) -> None:
        if node.params.params:
            ctx.state[STATE + ":spawn"][0].setdefault(node.name.value, []).append(node.params.params[0])

    def visit_For(self, node: cst.For, ctx: PythonContext) -> None:
        self._unknown(node.target, ctx)

    def visit_CompFor(self, node: cst.CompFor, ctx: PythonContext) -> None:
        self._unknown(node.target, ctx)

    def visit_WithItem(self, node: cst.WithItem, ctx: PythonContext) -> None:
        if node.asname is not None:
            self._unknown(node.asname.name, ctx)

    def visit_NamedExpr(self, node: cst.NamedExpr, ctx: PythonContext) -> None:
        self._bind(_key(node.target), node.value, ctx)

    def visit_ImportAlias(self, node: cst.ImportAlias, ctx: PythonContext) -> None:
        name = node.asname.name if node.asname is not None else node.name
        if isinstance(name, cst.Name):
            self._bind(name.value, _OTHER, ctx)

    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method == "add_argument":
            self._option(node, ctx)
        table = ctx.catalogue.table("device")
        uses = ctx.state[STATE][1]
        if isinstance(func, cst.Name) or (method == "spawn" or method == "start_processes"):
            self._spawn(node, table, ctx)
        if method == "to" and node.args and node.args[0].keyword is None and not node.args[0].star:
            uses.append((node.args[0].value, None))
        qualified = None
        for arg in node.args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            if name == "device":
                if method in table.get("int_device_methods", ()):
                    uses.append((arg.value, name))
                    continue
                qualified = qualified or ctx.qualify(func) or ""
                if qualified.startswith("torch.") and not qualified.startswith("torch.cuda."):
                    uses.append((arg.value, name))  # a CUDA API's own int (`torch.cuda.Stream(device=i)`) is its rule's
            elif name in _DDP_KEYWORDS:
                qualified = qualified or ctx.qualify(func) or ""
                if qualified in table.get("ddp_classes", ()):
                    uses.append((arg.value, name))
        last = method or (func.value if isinstance(func, cst.Name) else None)
        functions = table.get("int_device_functions", ())
        if node.args and node.args[0].keyword is None and not node.args[0].star and last is not None \
                and last in _last_names(tuple(functions)):  # most calls: no name lookup
            qualified = qualified or ctx.qualify(func) or ""
            if qualified in functions:
                uses.append((node.args[0].value, None))

    def _spawn(self, node: cst.Call, table: dict, ctx: PythonContext) -> None:
        """`mp.spawn(main, ...)` runs `main(i, ...)` with the process index; `main(x)` passes `x`."""
        _, calls, spawned = ctx.state[STATE + ":spawn"]
        first = node.args[0] if node.args else None
        positional = first is not None and first.keyword is None and not first.star
        if isinstance(node.func, cst.Name):
            calls.setdefault(node.func.value, []).append(first.value if positional else None)
        last = node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value
        if positional and isinstance(first.value, cst.Name) and last in ("spawn", "start_processes") \
                and ctx.qualify(node.func) in table.get("spawn_functions", ()):
            spawned.add(first.value.value)

    def _option(self, node: cst.Call, ctx: PythonContext) -> None:
        """`parser.add_argument("--local_rank", type=int)`: `args.local_rank` is an int."""
        flags = [string_value(a.value) for a in node.args if a.keyword is None]
        dest = keyword(node, "dest")
        name = string_value(dest.value) if dest is not None else next(
            (f.lstrip("-").replace("-", "_") for f in flags if f is not None and f.startswith("--")), None)
        if name is None:
            return
        kind = keyword(node, "type")
        is_int = kind is not None and isinstance(kind.value, cst.Name) and kind.value.value == "int"
        self._bind(f"option:{name}", "int" if is_int and keyword(node, "action") is None else _OTHER, ctx)

    # -- once the file is walked: which of those values are ints ---------------------------------
    def finish(self, ctx: PythonContext) -> None:
        bindings, uses = ctx.state[STATE]
        if not uses:
            return
        known: dict[str, bool] = {}
        functions, calls, spawned = ctx.state[STATE + ":spawn"]
        # the first parameter of a spawned function: the process index, and whatever its direct calls pass
        spawned_first = {id(param): name for name in spawned for param in functions.get(name, ())}

        def is_int(value: cst.BaseExpression | str, depth: int = 0) -> bool:
            if isinstance(value, str):
                return value == "int"
            if isinstance(value, cst.Param):
                name = spawned_first.get(id(value))
                return name is not None and depth <= 8 and all(
                    v is not None and is_int(v, depth + 1) for v in calls.get(name, ()))
            if isinstance(value, cst.Integer):
                return True
            if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
                return is_int(value.expression, depth)
            if isinstance(value, cst.BinaryOperation) and isinstance(
                    value.operator, (cst.Modulo, cst.FloorDivide, cst.Add, cst.Subtract, cst.Multiply)):
                return is_int(value.left, depth) and is_int(value.right, depth)
            if isinstance(value, cst.Call):
                if isinstance(value.func, cst.Name) and value.func.value == "int":
                    return True
                return ctx.qualify(value.func) in ctx.catalogue.table("device").get("int_functions", ())
            key = _key(value)
            if key is None or depth > 8:
                return False
            if key not in known:
                known[key] = False  # a cycle is not an int
                found = bindings.get(key)
                if found is None and "." in key and not key.startswith("self."):
                    found = bindings.get("option:" + key.split(".", 1)[1])
                known[key] = bool(found) and all(is_int(v, depth + 1) for v in found)
            return known[key]

        for value, name in uses:
            if name == "device_ids":
                if isinstance(value, (cst.List, cst.Tuple)) and value.elements \
                        and all(is_int(e.value) for e in value.elements):
                    self._report(value, f"`device_ids={ctx.module.code_for_node(value)[:40]}` of "
                                 "DistributedDataParallel: device indexes, which a CPU module does not take", ctx)
            elif is_int(value):
                self._report(value, "`output_device=` of DistributedDataParallel: a device index, which a CPU "
                             "module does not take" if name == "output_device" else None, ctx)

    def _report(self, value: cst.BaseExpression, problem: str | None, ctx: PythonContext) -> None:
        index = ctx.module.code_for_node(value)[:40]
        problem = problem or (f"The int device `{index}`, an index of the current accelerator (a CUDA GPU where "
                              "this was written)")
        ctx.report(self, value, index=f"`{index}`", problem=problem)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """`device_at(i)` where torch takes the device; DDP's indexes kept off the CPU (audit --fix)."""
        return index_device_fix(report.node, rewriter) if rewriter.device_known() else None

