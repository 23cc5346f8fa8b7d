from __future__ import annotations

from auditor.analysis.seeds import redundant_seeding
from auditor.checks._cuda_api import CudaApiRule
from auditor.checks.base import UNCHANGED, FixSpec, Invalid, Valid
from auditor.fix.plan import FixPlan, Reported, Rewriter
from auditor.model import Category, Severity

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
        Invalid("import random\nimport torch\n\ndef seed_all(seed):\n    random.seed(seed)\n    torch.manual_seed(seed)\n"
                "    torch.backends.cudnn.deterministic = True\n    torch.cuda.manual_seed_all(seed)\n", line=8,
                fixed="import random\nimport torch\n\ndef seed_all(seed):\n    random.seed(seed)\n    torch.manual_seed(seed)\n"
                      "    torch.backends.cudnn.deterministic = True\n"),
        # Left alone: another seed, or torch.manual_seed in another block (switching reseeds the CPU).
        Invalid("import torch\ntorch.manual_seed(0)\ntorch.cuda.manual_seed_all(1)\n", line=3, fixed=UNCHANGED),
        Invalid("import torch\nif cpu:\n    torch.manual_seed(s)\ntorch.cuda.manual_seed(s)\n", line=4, fixed=UNCHANGED),
        # ... the seed reassigned in between, a seed with a side effect, random numbers drawn in between.
        Invalid("import torch\ntorch.manual_seed(seed)\nseed = seed + rank\ntorch.cuda.manual_seed_all(seed)\n", line=4,
                fixed=UNCHANGED),
        Invalid("import torch\ntorch.manual_seed(next(it))\ntorch.cuda.manual_seed_all(next(it))\n", line=3,
                fixed=UNCHANGED),
        Invalid('import torch\ntorch.manual_seed(s)\nx = torch.randn(3, device="cuda")\ntorch.cuda.manual_seed_all(s)\n',
                line=4, fixed=UNCHANGED),
    ]

    FIXES = (FixSpec("F22", "safe", "delete `torch.cuda.manual_seed(_all)(s)` when the same block also calls "
                     "`torch.manual_seed(s)` with the same `s` (which already seeds every CUDA device)"),)

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | None:
        """Only the redundant call goes (auditor/analysis/seeds.py, the judgement the `redundant`
        context shares); a CUDA seed without such a seeding stays a suggestion: switching to
        `torch.manual_seed` would also reseed the CPU generator and change the random streams."""
        ref = report.ref
        call = ref.call if ref is not None else None
        if call is None or ref.qualified not in _CUDA_SEEDERS:
            return None
        if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            return FixPlan.held("not removed: it does not take one plain seed argument", "F22")
        statement = rewriter.lone_statement(call)
        block = rewriter.parent(statement) if statement is not None else None
        if statement is None or block is None:
            return FixPlan.held("not removed: it is not a statement of its own (a one-line `if`, a lambda, an "
                                "expression)", "F22")
        seeders = frozenset(rewriter.ctx.catalogue.table("contexts").get("redundant", {}).get("seeders", ()))
        found = redundant_seeding(statement, block.body, call.args[0].value, rewriter.ctx.qualify, seeders,
                                  rewriter.code)
        if found is None:
            return FixPlan.held("not removed: no seeding of every device with the same value stands beside it in "
                                "this block (another seed, a seed computed or reassigned in between, random numbers "
                                "drawn in between); switching it to `torch.manual_seed` would also reseed the CPU",
                                "F22")
        return FixPlan("safe", f"Remove: `{found.seeder}({found.seed})` beside it already seeds every CUDA device",
                       [rewriter.delete_statement(statement)], None, fix_id="F22")
