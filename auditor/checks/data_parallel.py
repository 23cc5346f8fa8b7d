from __future__ import annotations

import libcst as cst

from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.context import PythonContext, Reference
from auditor.model import Category, Severity

STATE = "LK303"


class DataParallel(ApiRule):
    code = "LK303"
    name = "data-parallel"
    category = Category.DISTRIBUTED
    severity = Severity.MINOR
    message = ("`{api}` is single-process data parallelism: it spreads the batch only where DataParallel knows the "
               "device ({working_targets}); on {degrading_targets} it just calls the module.")
    suggestion = "{replacement}."
    what = ("Finds uses of `torch.nn.DataParallel` / `torch.nn.parallel.DataParallel` and the functional "
            "`torch.nn.parallel.data_parallel`: calls (wrapping a model) and subclassing. `isinstance` checks, "
            "comparisons and tuples of wrapper classes that unwrap a model are not uses.")
    why = ("DataParallel is single-process and legacy. On MPS and CPU it silently runs the module once with no "
           "parallelism, and the XLA stacks do not support it; the PyTorch docs recommend "
           "DistributedDataParallel even on one node.")
    instead = ("```python\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n# or FSDP2\n"
               "from torch.distributed.fsdp import fully_shard\nfully_shard(model)\n```")

    VALID = [
        Valid('import torch\nif isinstance(model, (torch.nn.DataParallel, DDP)):\n    model = model.module\n'),
        Valid('from torch.nn import DataParallel\nif type(model) is DataParallel:\n    model = model.module\n'),
        Valid('"""Wrap it in torch.nn.DataParallel."""\n# model = nn.DataParallel(model)\n'),
        Valid('import logging\nlogging.warning("nn.DataParallel is deprecated")\n'),
        Valid('from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n'),
        Valid('import torch\nWRAPPERS = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)\n'),
    ]
    INVALID = [
        Invalid('import torch\nmodel = torch.nn.DataParallel(model)\n', line=2),
        Invalid('from torch import nn\nnet = nn.DataParallel(net, device_ids=[0, 1])\n', line=2),
        Invalid('from torch.nn.parallel import DataParallel as DP\nmodel = DP(model)\n', line=2),
        Invalid('import torch.nn as nn\nclass Wrapper(nn.DataParallel):\n    pass\n', line=2),
        Invalid('from torch.nn.parallel import data_parallel\nout = data_parallel(model, x, [0, 1])\n', line=2),
    ]

    def begin(self, ctx: PythonContext) -> None:
        ctx.state[STATE] = set()  # ids of class-base expressions

    def visit_ClassDef(self, node: cst.ClassDef, ctx: PythonContext) -> None:
        ctx.state[STATE].update(id(base.value) for base in node.bases)

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        # Wrapping (a call) and subclassing use DataParallel; isinstance checks, comparisons and
        # tuples of wrapper classes only recognise an already wrapped model.
        if ref.kind == "call" or id(ref.node) in ctx.state[STATE]:
            super().on_reference(ref, ctx)
