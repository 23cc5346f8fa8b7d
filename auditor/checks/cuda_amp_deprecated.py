from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan
from auditor.model import Category, Severity

if TYPE_CHECKING:
    from auditor.context import Reference
    from auditor.fix.plan import Reported, Rewriter


class CudaAmpDeprecated(CudaApiRule):
    code = "LK209"
    name = "cuda-amp-deprecated"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` is deprecated (torch 2.4) and pins mixed precision to CUDA; elsewhere AMP silently turns off."
    suggestion = "{replacement}"
    min_torch = "2.4"
    what = ("Finds everything under `torch.cuda.amp`: `autocast`, `GradScaler`, `custom_fwd`, `custom_bwd`, as "
            "calls, context managers, decorators and imports (`from torch.cuda.amp import autocast` and each "
            "bare `autocast()` that follows).")
    why = ("The wrappers hard-code `\"cuda\"`: on TPU, Trainium, MPS, XPU and CPU they warn and disable "
           "autocast or the scaler, so training silently runs in fp32. They emit a FutureWarning since torch 2.4.")
    instead = ("```python\nwith torch.amp.autocast(dev.type):\n    loss = model(x)\n"
               "scaler = torch.amp.GradScaler(dev.type)\n\n@torch.amp.custom_fwd(device_type=dev.type)\n"
               "def forward(ctx, x): ...\n```\n\nA strict rename first: `torch.amp.autocast(\"cuda\", enabled=..., "
               "dtype=...)` (pass keywords: the argument order differs). `torch.cpu.amp` is not NVIDIA lock-in.")

    VALID = [
        Valid("import torch\nwith torch.amp.autocast(device_type=dev.type):\n    y = model(x)\n"),
        Valid("import torch\nwith torch.cpu.amp.autocast():\n    y = model(x)\n"),
        Valid("def run(cuda, model, x):\n    with cuda.amp.autocast():\n        return model(x)\n"),
        Valid('"""Wrap in torch.cuda.amp.autocast()."""\n# from torch.cuda.amp import autocast\n'
              'print("torch.cuda.amp.autocast is deprecated")\n'),
        Valid("from torch.amp import autocast\nwith autocast('cpu'):\n    pass\n"),
    ]
    INVALID = [
        Invalid("import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n", line=2),
        Invalid("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n", line=1),
        Invalid("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n", line=2),
        Invalid("import torch as th\nscaler = th.cuda.amp.GradScaler()\n", line=2),
        Invalid("import torch\n\nclass F(torch.autograd.Function):\n    @staticmethod\n"
                "    @torch.cuda.amp.custom_fwd\n    def forward(ctx, x):\n        return x\n", line=5),
        Invalid("from torch.cuda import amp\nwith amp.autocast(enabled=True):\n    pass\n", line=2),
        # Fixes (F01-F03): the expected code after `--fix`, run until stable.
        Invalid("import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n", line=2, fix_class="safe",
                fixed='import torch\nwith torch.amp.autocast("cuda", dtype=torch.float16):\n    y = model(x)\n'),
        Invalid("import torch as th\nwith th.cuda.amp.autocast(True, th.bfloat16, False):\n    pass\n", line=2,
                fixed='import torch as th\nwith th.amp.autocast("cuda", enabled=True, dtype=th.bfloat16, '
                      'cache_enabled=False):\n    pass\n'),
        Invalid("from torch.cuda.amp import autocast, GradScaler\nimport torch\n\nscaler = GradScaler(init_scale=1024)\n"
                "with autocast(enabled=use_amp):\n    pass\n", line=4,
                fixed='import torch\n\nscaler = torch.amp.GradScaler("cuda", init_scale=1024)\n'
                      'with torch.amp.autocast("cuda", enabled=use_amp, dtype=torch.float16):\n    pass\n'),
        Invalid("from torch.cuda.amp import autocast\n\n\n@autocast()\ndef forward(x):\n    return x\n", line=4,
                fixed='import torch\n\n\n@torch.amp.autocast("cuda", dtype=torch.float16)\ndef forward(x):\n'
                      '    return x\n'),
        Invalid("import torch\n\nclass F(torch.autograd.Function):\n    @staticmethod\n"
                "    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n    def forward(ctx, x):\n        return x\n\n"
                "    @staticmethod\n    @torch.cuda.amp.custom_bwd\n    def backward(ctx, g):\n        return g\n",
                line=5, fix_class="safe",
                fixed="import torch\n\nclass F(torch.autograd.Function):\n    @staticmethod\n"
                      '    @torch.amp.custom_fwd(cast_inputs=torch.float32, device_type="cuda")\n    def forward(ctx, x):\n'
                      "        return x\n\n    @staticmethod\n"
                      '    @torch.amp.custom_bwd(device_type="cuda")\n    def backward(ctx, g):\n        return g\n'),
        Invalid("from torch.cuda import amp  # mixed precision\nscaler = Wrapper(amp.GradScaler(),\n"
                "                 amp.GradScaler(enabled=False))\n", line=2,
                fixed='import torch\nscaler = Wrapper(torch.amp.GradScaler("cuda"),\n'
                      '                 torch.amp.GradScaler("cuda", enabled=False))\n'),
        # Inside an f-string the inserted device takes the other quote (nested quotes need Python 3.12); with
        # both quotes taken it stays a suggestion.
        Invalid('import torch\nlog(f"scaler: {torch.cuda.amp.GradScaler()}")\n', line=2,
                fixed="import torch\nlog(f\"scaler: {torch.amp.GradScaler('cuda')}\")\n"),
        Invalid("import torch\nlog(f\"{f'{torch.cuda.amp.GradScaler()}'}\")\n", line=2, fixed=UNCHANGED),
        # Left alone: torch imported lazily (inside a function only) stays lazy: no `import torch` at the top.
        Invalid("def train(model):\n    from torch.cuda.amp import autocast\n    with autocast():\n        return model()\n",
                line=3, fixed=UNCHANGED),
        # isinstance checks are widened to the base class, which the rewritten scalers still are.
        Invalid("import torch\ns = torch.cuda.amp.GradScaler()\nok = isinstance(s, torch.cuda.amp.GradScaler)\n", line=3,
                fixed='import torch\ns = torch.amp.GradScaler("cuda")\nok = isinstance(s, torch.amp.GradScaler)\n'),
        # Left alone: a subclass (rewritten scalers would not be one), unpacked arguments, a reference that is
        # not called, `torch` taken by a parameter.
        Invalid("import torch\nclass S(torch.cuda.amp.GradScaler):\n    pass\ns = torch.cuda.amp.GradScaler()\n",
                line=4, fixed=UNCHANGED),
        Invalid("import torch\ns = torch.cuda.amp.GradScaler(**kw)\n", line=2, fixed=UNCHANGED),
        Invalid("import torch\nwith torch.cuda.amp.autocast(*flags):\n    pass\n", line=2, fixed=UNCHANGED),
        Invalid("import torch\nctx = torch.cuda.amp.autocast if amp else nullcontext\n", line=2, fixed=UNCHANGED),
        Invalid("from torch.cuda.amp import autocast\n\ndef f(torch):\n    with autocast():\n        return torch\n",
                line=4, fixed=UNCHANGED),
    ]

    FIXES = (
        FixSpec("F01", "safe", '`torch.cuda.amp.autocast(E, D, C)` -> `torch.amp.autocast("cuda", enabled=E, dtype=D, '
                'cache_enabled=C)` (positional arguments become keywords: the orders differ; `dtype=torch.float16` '
                "is added when missing, as the wrapper hard-codes it)", "2.0"),
        FixSpec("F02", "safe", '`torch.cuda.amp.GradScaler(...)` -> `torch.amp.GradScaler("cuda", ...)`', "2.3"),
        FixSpec("F03", "safe", '`@torch.cuda.amp.custom_fwd` / `custom_bwd` -> `@torch.amp.custom_fwd(device_type="cuda")`'
                " (arguments kept)", "2.4"),
    )

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        ref = report.ref
        if ref is None or ref.kind == "import":
            return None  # the import goes once no use is left (auditor/fix/imports.py)
        name = ref.qualified.rsplit(".", 1)[-1]
        if name == "autocast" and ref.call is not None:
            return _autocast(ref, rewriter)
        if name == "GradScaler" and ref.call is not None:
            return _grad_scaler(ref, rewriter)
        if name == "GradScaler" and _type_check_argument(ref.node, rewriter):
            return _widen_type_check(ref, rewriter)
        if name in ("custom_fwd", "custom_bwd"):
            return _custom(name, ref, rewriter)
        return FixPlan.held("not rewritten: a reference that is not called (passed or stored); the rewrite needs "
                            "the call's arguments")


_TYPE_CHECKS = ("isinstance", "issubclass")


def _type_check_argument(node: cst.CSTNode, rewriter: Rewriter) -> bool:
    """`isinstance(s, torch.cuda.amp.GradScaler)` / `issubclass(C, (A, torch.cuda.amp.GradScaler))`."""
    parent = rewriter.parent(node)
    if isinstance(parent, cst.Element):
        parent = rewriter.parent(rewriter.parent(parent))  # the tuple's Arg
    call = rewriter.parent(parent) if isinstance(parent, cst.Arg) else None
    return (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _TYPE_CHECKS
            and rewriter.is_free(call.func.value) and len(call.args) == 2 and call.args[1] is parent)


def _widen_type_check(ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    """torch.cuda.amp.GradScaler subclasses torch.amp.GradScaler: the check on the base class holds
    for the scalers made either way, so it stays true once the construction is rewritten."""
    spelled = rewriter.name_for("torch.amp.GradScaler", site=ref)
    if spelled is None:
        return FixPlan.held("not rewritten: no import reaches `torch.amp.GradScaler` here")
    return FixPlan("safe", f"Check against `{spelled[0]}` (the base class: true for the scalers made either way)",
                   [rewriter.replace(ref.node, spelled[0]), *spelled[1]], "2.3", fix_id="F02")


def _other_scaler_uses(rewriter: Rewriter) -> str | None:
    """A use of `torch.cuda.amp.GradScaler` that would stop matching the rewritten scalers and no
    fix adjusts: a subclass, `type(s) is ...` (isinstance checks are widened instead)."""
    for ref in rewriter.references(("torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler")):
        if ref.kind in ("call", "import") or _type_check_argument(ref.node, rewriter):
            continue
        holder = rewriter.statement_of(ref.node)
        if isinstance(holder, cst.ClassDef):
            return f"class {holder.name.value}(...)"
        return " ".join(rewriter.code(holder if holder is not None else ref.node).split())[:60]
    return None


_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")  # torch.cuda.amp.autocast's positional order


def _autocast(ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    call = ref.call
    args = list(call.args)
    positional = [a for a in args if a.keyword is None]
    keywords = {a.keyword.value for a in args if a.keyword is not None}
    if any(a.star for a in args):
        return FixPlan.held("not rewritten: unpacked arguments (`*args`/`**kwargs`): which of enabled/dtype/"
                            "cache_enabled they hold is not known here, and torch.amp.autocast takes them in another "
                            "order", "F01")
    if len(positional) > len(_AUTOCAST_ARGS) or keywords - set(_AUTOCAST_ARGS):
        return FixPlan.held("not rewritten: arguments torch.cuda.amp.autocast does not take", "F01")
    spelled = rewriter.name_for("torch.amp.autocast", site=ref)
    dtype = None if "dtype" in keywords or len(positional) >= 2 else rewriter.name_for("torch.float16", site=ref)
    if spelled is None or ("dtype" not in keywords and len(positional) < 2 and dtype is None):
        return FixPlan.held("not rewritten: no import reaches `torch.amp.autocast` here (the name `torch` means "
                            "something else)", "F01")
    edits = [rewriter.replace(call.func, spelled[0]), *spelled[1]]
    extra = f"dtype={dtype[0]}" if dtype is not None else ""
    if dtype is not None:
        edits += [e for e in dtype[1] if e.content not in {i.content for i in spelled[1]}]
    if not args:
        edits.append(rewriter.append_args(call, '"cuda"' + (", " + extra if extra else "")))
    else:
        first = '"cuda", ' + (_AUTOCAST_ARGS[0] + "=" if args[0].keyword is None else "")
        edits.append(rewriter.insert_before(args[0], first))
        edits += [rewriter.insert_before(arg.value, _AUTOCAST_ARGS[i] + "=") for i, arg in enumerate(positional) if i]
        if extra:
            edits.append(rewriter.append_args(call, extra))
    return FixPlan("safe", f'Replace with `{spelled[0]}("cuda", ...)` (keyword arguments)', edits, "2.0", fix_id="F01")


def _grad_scaler(ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    call = ref.call
    if any(a.star for a in call.args):
        return FixPlan.held("not rewritten: unpacked arguments (`*args`/`**kwargs`) may already hold the device "
                            "or positional arguments that would shift", "F02")
    other = _other_scaler_uses(rewriter)
    if other is not None:
        return FixPlan.held(f"not rewritten: `{other}` relies on the class `torch.cuda.amp.GradScaler` (the "
                            "rewritten scalers would not be one)", "F02")
    spelled = rewriter.name_for("torch.amp.GradScaler", site=ref)
    if spelled is None:
        return FixPlan.held("not rewritten: no import reaches `torch.amp.GradScaler` here", "F02")
    edits = [rewriter.replace(call.func, spelled[0]), *spelled[1], rewriter.prepend_args(call, '"cuda"')]
    return FixPlan("safe", f'Replace with `{spelled[0]}("cuda", ...)`', edits, "2.3", fix_id="F02")


def _custom(name: str, ref: Reference, rewriter: Rewriter) -> FixPlan | None:
    spelled = rewriter.name_for(f"torch.amp.{name}", site=ref)
    if spelled is None:
        return FixPlan.held(f"not rewritten: no import reaches `torch.amp.{name}` here", "F03")
    message = f'Replace with `{spelled[0]}(..., device_type="cuda")`'
    call = ref.call
    if call is not None:
        if any(a.star for a in call.args) or any(a.keyword is not None and a.keyword.value == "device_type"
                                                 for a in call.args):
            return FixPlan.held("not rewritten: unpacked arguments or a `device_type=` already there", "F03")
        edits = [rewriter.replace(call.func, spelled[0]), *spelled[1],
                 rewriter.append_args(call, 'device_type="cuda"')]
        return FixPlan("safe", message, edits, "2.4", fix_id="F03")
    if isinstance(rewriter.parent(ref.node), cst.Decorator):
        edits = [rewriter.replace(ref.node, f'{spelled[0]}(device_type="cuda")'), *spelled[1]]
        return FixPlan("safe", message, edits, "2.4", fix_id="F03")
    return FixPlan.held("not rewritten: a reference that is neither called nor a decorator", "F03")
