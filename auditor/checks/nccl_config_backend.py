from __future__ import annotations

from auditor.checks._config import ConfigValueRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class NcclConfigBackend(ConfigValueRule):
    code = "LK305"
    name = "nccl-config-backend"
    category = Category.DISTRIBUTED
    severity = Severity.MAJOR
    message = ("`{key}: {value}` {what}: NCCL exists only on {nvidia_and_working_targets}; it raises on "
               "{raising_targets}.")
    suggestion = "Use {instead}."
    what = ("Finds `backend: nccl` (and `dist_backend`, `distributed_backend`, `process_group_backend`, "
            "`ddp_backend`, `comm_backend`, ...) in YAML, JSON and TOML training configs. A key that merely contains "
            "the word, or a value that mentions NCCL in a sentence, is not a finding.")
    why = ("init_process_group with NCCL raises on XPU (xccl), TPU, Trainium, MPS and CPU (gloo): the config makes "
           "every distributed run NVIDIA-only.")
    instead = ("```yaml\ndistributed:\n  backend: null   # torch.distributed picks nccl, xccl or gloo per device\n```")

    VALID = [
        Valid("distributed:\n  backend: gloo\n  note: falls back from nccl\n", path="configs/dist.yaml"),
        Valid("nccl_backend_timeout: 600\nbackend_nccl_note: nccl\n", path="conf/x.yaml"),
        Valid("model:\n  --distributed-backend: gloo\n  --nccl-note: nccl\n", path="launch/gpt.yaml"),
    ]
    INVALID = [
        Invalid("distributed:\n  backend: nccl\n  world_size: 8\n", path="configs/dist.yaml", line=2),
        Invalid('{"comms_config": {"dist_backend": "NCCL"}}\n', path="deepspeed_config.json", line=1),
        # a launcher's flags written as a mapping (Megatron / NeMo launch configs)
        Invalid("model:\n  --distributed-backend: nccl\n", path="launch/gpt.yaml", line=2),
    ]
