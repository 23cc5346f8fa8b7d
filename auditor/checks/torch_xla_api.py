from __future__ import annotations

from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.model import Category, Severity


class TorchXlaApi(ApiRule):
    code = "LK104"
    name = "torch-xla-api"
    category = Category.DEVICE
    severity = Severity.INFO
    message = ("`{api}` ties this code to torch_xla, the previous XLA-based stack (legacy torch-neuronx on Trainium): "
               "it runs on {working_targets} and raises on {raising_targets}; torch.accelerator does not see XLA "
               "devices, and the native TorchTPU and TorchNeuron backends do not use torch_xla.")
    suggestion = "Prefer {replacement}."
    what = ("Finds imports and uses of `torch_xla` (`import torch_xla.core.xla_model as xm`, `xm.xla_device()`, "
            "`xm.mark_step()`, `torch_xla.sync()`, `torch_xla.distributed.*`, ...).")
    why = ("torch_xla code runs only on the XLA stacks (PJRT TPUs and the XLA-based torch-neuronx). The new native "
           "backends, TorchTPU (device \"tpu\") and TorchNeuron (device \"neuron\"), are PrivateUse1 backends that "
           "code written against torch.accelerator reaches without change, while torch_xla calls do not carry "
           "over to them, nor to any other target.")
    instead = ("```python\nDEVICE = torch.accelerator.current_accelerator(check_available=True) or torch.device(\"cpu\")\n"
               "model.to(DEVICE)\n```\n\n"
               "`xm.mark_step()` / `torch_xla.sync()` have no counterpart to swap in: they cut and run the pending "
               "lazy graph, which eager backends (TorchTPU, TorchNeuron, GPUs) never build; they are not "
               "`torch.accelerator.synchronize()`, which only waits for queued work. Keep XLA-only code behind one "
               "small adapter if the old stacks must stay supported.")

    VALID = [
        Valid('"""Runs on TPU through torch_xla."""\n# import torch_xla.core.xla_model as xm\n'),
        Valid('import logging\nlogging.info("torch_xla is not installed")\n'),
        Valid('def step(xm):\n    xm.mark_step()\n'),
        Valid('import importlib.util\nhas_xla = importlib.util.find_spec("torch_xla") is not None\n'),
    ]
    INVALID = [
        Invalid('import torch_xla.core.xla_model as xm\n', line=1),
        Invalid('import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n', line=3),
        Invalid('import torch_xla\ntorch_xla.sync()\n', line=2),
        Invalid('from torch_xla.core import xla_model\ndevice = xla_model.xla_device()\n', line=2),
        Invalid('from torch_xla.distributed import xla_backend as xb\n', line=1),
    ]
