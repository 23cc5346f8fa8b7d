from __future__ import annotations

from auditor.checks._config import ConfigValueRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class CudaConfigDevice(ConfigValueRule):
    code = "LK105"
    name = "cuda-config-device"
    category = Category.DEVICE
    severity = Severity.MAJOR
    message = ("`{key}: {value}` {what}: the run needs a CUDA device ({nvidia_and_working_targets}) and raises on "
               "{raising_targets}.")
    suggestion = "Use {instead}."
    what = ("Finds values in training configs (Lightning, Hydra and accelerate YAML, DeepSpeed and accelerate JSON, "
            "TOML configs) that choose CUDA hardware: `device: cuda` / `cuda:0` (and `map_location`, `device_map`, "
            "`*_device` keys), Lightning `accelerator: gpu`, accelerate `distributed_type: MULTI_GPU` and an FP8 "
            "backend of `TE` / `MSAMP` (NVIDIA TransformerEngine, MS-AMP), DeepSpeed "
            "`\"amp\": {\"enabled\": true}` (NVIDIA Apex). Keys must match exactly and values as a whole: a `device:` "
            "holding a path, a description mentioning CUDA, a comment, or DeepSpeed `fp16` (native mixed precision) "
            "are not findings. Rows: `[[config_value]]` in rules/images.toml.")
    why = ("The config, not the code, picks the device: the same code then fails on TPU, Trainium, MPS, XPU and CPU "
           "(no CUDA device, no Apex), however portable the Python is.")
    instead = ("```yaml\ntrainer:\n  accelerator: auto   # Lightning picks CUDA, MPS, XLA or CPU\n"
               "device: auto          # resolved with torch.accelerator.current_accelerator()\n```")

    VALID = [
        Valid("trainer:\n  accelerator: auto\n  devices: 1\n", path="configs/train.yaml"),
        Valid("model:\n  device: /dev/cuda0   # a path, not a device choice\n  description: trains on cuda\n"
              "  cuda_device_note: cuda\n", path="configs/model.yaml"),
        Valid('{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}\n',
              path="ds_config.json"),
        Valid("# device: cuda\ndevice: cpu\nnote: \"device: cuda\"\n", path="conf/run.yaml"),
        Valid('[training]\ndevice = "xpu"\ncomment = "cuda"\n', path="configs/train.toml"),
    ]
    INVALID = [
        Invalid("trainer:\n  accelerator: gpu\n  devices: 4\n", path="configs/trainer/gpu.yaml", line=2),
        Invalid("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n",
                path="accelerate_config.yaml", line=2),
        Invalid("experiment:\n  device: cuda:0\n", path="conf/exp.yaml", line=2),
        Invalid('{\n  "train_batch_size": 32,\n  "amp": {\n    "enabled": true,\n    "opt_level": "O1"\n  }\n}\n',
                path="ds_config_amp.json", line=4),
        Invalid('[training]\ndevice = "cuda"\n', path="configs/train.toml", line=2),
        Invalid("distributed_type: MULTI_GPU\nmixed_precision: fp8\nfp8_config:\n  backend: TE\n  fp8_format: HYBRID\n",
                path="accelerate_configs/fp8.yaml", line=4),
    ]
