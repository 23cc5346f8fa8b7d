from __future__ import annotations

import libcst as cst

from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity

_SEEDERS = ("torch.manual_seed", "torch.random.manual_seed")
_CUDA_SEEDERS = ("torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.random.manual_seed",
                 "torch.cuda.random.manual_seed_all")


class CudaRngSeed(CudaApiRule):
    code = "LK207"
    name = "cuda-rng-seed"
    category = Category.CUDA_API
    severity = Severity.MINOR
    message = "`{api}` seeds only CUDA devices; on other accelerators it is a no-op and their RNG stays unseeded."
    suggestion = "{replacement}"
    what = "Finds `torch.cuda.manual_seed(s)`, `manual_seed_all(s)`, `seed()` and `seed_all()`."
    why = ("Off CUDA the call is queued and never runs, so MPS, XPU, TPU and Trainium runs are not reproducible "
           "even though the code looks seeded.")
    instead = ("```python\ntorch.manual_seed(seed)\n```\n\n`torch.manual_seed` seeds the CPU and every CUDA, MPS, XPU, "
               "MTIA and PrivateUse1 device (not XLA). When the same scope already calls `torch.manual_seed(seed)`, "
               "simply delete the CUDA call.")

    VALID = [
        Valid("import torch\ntorch.manual_seed(0)\n"),
        Valid("def seed_all(cuda, s):\n    cuda.manual_seed_all(s)\n"),
        Valid('"""Also calls torch.cuda.manual_seed_all(seed)."""\n# torch.cuda.manual_seed(0)\n'
              'print("torch.cuda.manual_seed_all")\n'),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.manual_seed_all(seed)\n", line=2),
        Invalid("import torch as th\nth.cuda.manual_seed(seed)\n", line=2),
        Invalid("from torch import cuda as tc\ntc.seed_all()\n", line=2),
        Invalid("from torch.cuda import manual_seed\nmanual_seed(1)\n", line=2),
        # Fix (F22): the CUDA seed after `torch.manual_seed` with the same seed is redundant.
        Invalid("import torch\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n    torch.cuda.manual_seed_all(seed)\n"
                "    return seed\n", line=5, fix_class="safe",
                fixed="import torch\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n    return seed\n"),
        # Left alone: another seed, or torch.manual_seed in another block (switching reseeds the CPU).
        Invalid("import torch\ntorch.manual_seed(0)\ntorch.cuda.manual_seed_all(1)\n", line=3, fixed=UNCHANGED),
        Invalid("import torch\nif cpu:\n    torch.manual_seed(s)\ntorch.cuda.manual_seed(s)\n", line=4, fixed=UNCHANGED),
    ]

    FIXES = (FixSpec("F22", "safe", "delete `torch.cuda.manual_seed(_all)(s)` when the same block also calls "
                     "`torch.manual_seed(s)` with the same `s` (which already seeds every CUDA device)"),)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """Only the redundant call goes; a CUDA seed without `torch.manual_seed` stays a suggestion:
        switching to it would also reseed the CPU generator and change the random streams."""
        ref = report.ref
        call = ref.call if ref is not None else None
        if call is None or ref.qualified not in _CUDA_SEEDERS or len(call.args) != 1 or call.args[0].keyword:
            return None
        statement = rewriter.lone_statement(call)
        block = rewriter.parent(statement) if statement is not None else None
        if statement is None or block is None:
            return None
        seed = rewriter.code(call.args[0].value)
        for other in block.body:
            if other is not statement and _seeds_all(other, seed, rewriter):
                return FixPlan("safe", f"Remove: `torch.manual_seed({seed})` in the same block already seeds "
                                       "every CUDA device", [rewriter.delete_statement(statement)], None, fix_id="F22")
        return None


def _seeds_all(statement: cst.CSTNode, seed: str, rewriter: Rewriter) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0].keyword is None
                and rewriter.ctx.qualify(call.func) in _SEEDERS and rewriter.code(call.args[0].value) == seed):
            return True
    return False
