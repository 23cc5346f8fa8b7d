"""Which torch device a target runs on, and how a generated file tells whether it is there.

The target registry passes its own `TargetDevice` values; `DEFAULT_DEVICES` stands in until it
does, for today's targets. Nothing here imports a vendor package: the generated files probe the
device when they run (see `templates/common.py.tmpl`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

_DEVICE = re.compile(r"[a-z][a-z0-9_]*(?::[0-9]{1,3})?\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_BUILDS = ("cuda", "hip", "xpu")  # attributes of torch.version that name a build


@dataclass(frozen=True)
class TargetDevice:
    """How one target is reached from PyTorch.

    device: the torch device string the run uses ("tpu", "neuron", "cuda", "mps", "xpu", "cpu",
        "npu", "xla", optionally with an index: "cuda:1").
    label: what a reader calls it, for the generated docstrings ("AMD ROCm (the HIP build)").
    backend_modules: modules that register the device, imported inside a try by the generated file
        when it runs, never when pytest collects it ("torch_tpu").
    build: a `torch.version` attribute that must be set for the generated default to count as this
        target: ROCm's HIP build also says "cuda", so "hip" tells it from NVIDIA (and "cuda" the other
        way round). An environment override of the device drops the check."""

    device: str
    label: str
    backend_modules: tuple[str, ...] = ()
    build: str | None = None

    def __post_init__(self) -> None:
        if not _DEVICE.match(self.device):
            raise ValueError(f"device {self.device!r}: expected a torch device type such as 'tpu' or 'cuda:0'")
        for name in self.backend_modules:
            if not _MODULE.match(name):
                raise ValueError(f"backend module {name!r}: expected a dotted module name")
        if self.build is not None and self.build not in _BUILDS:
            raise ValueError(f"build {self.build!r}: expected one of {', '.join(_BUILDS)}")

    @property
    def device_type(self) -> str:
        return self.device.partition(":")[0]


# The reference a move starts from: NVIDIA's CUDA build.
NVIDIA = TargetDevice("cuda", "NVIDIA CUDA", build="cuda")

# Today's targets (README "Rules"); the target registry supersedes this table when it passes one.
DEFAULT_DEVICES: dict[str, TargetDevice] = {
    "rocm": TargetDevice("cuda", "AMD ROCm (the HIP build of torch)", build="hip"),
    "tpu": TargetDevice("tpu", "Google TPU through TorchTPU", ("torch_tpu",)),
    "trainium": TargetDevice("neuron", "AWS Trainium through TorchNeuron", ("torch_neuronx",)),
    "mps": TargetDevice("mps", "Apple MPS"),
    "xpu": TargetDevice("xpu", "Intel XPU"),
    "cpu": TargetDevice("cpu", "CPU"),
}

# Device types outside the targets that an environment override may still name: the generated
# files know how to load their backends too.
OTHER_BACKENDS: dict[str, tuple[str, ...]] = {
    "npu": ("torch_npu",),
    "xla": ("torch_xla",),
    "hpu": ("habana_frameworks.torch",),
}


def resolve_target(target: str, device: str | TargetDevice | None,
                   devices: Mapping[str, TargetDevice]) -> TargetDevice:
    """The device `target` runs on: `device` when given (a plain string keeps the table's label,
    build and backends when it names the table's device type: "cuda:1" for rocm is still HIP),
    else the table's entry."""
    if isinstance(device, TargetDevice):
        return device
    known = devices.get(target)
    if device is None:
        if known is None:
            raise ValueError(f"target {target!r} has no device: pass device= (known: {', '.join(sorted(devices))})")
        return known
    if known is not None and known.device_type == device.partition(":")[0]:
        return replace(known, device=device)
    return TargetDevice(device, label=known.label if known else target,
                        backend_modules=_backends_for(device.partition(":")[0], devices))


def resolve_reference(reference: str | TargetDevice) -> TargetDevice:
    """The reference device: "cuda" means NVIDIA's build; any other string is taken as it is."""
    if isinstance(reference, TargetDevice):
        return reference
    if reference == NVIDIA.device:
        return NVIDIA
    return TargetDevice(reference, label=reference, backend_modules=_backends_for(reference.partition(":")[0], {}))


def backend_table(devices: Mapping[str, TargetDevice], *extra: TargetDevice) -> dict[str, tuple[str, ...]]:
    """Device type -> backend modules, for every device the generated file may be pointed at."""
    table = dict(OTHER_BACKENDS)
    for spec in (*devices.values(), *extra):
        if spec.backend_modules:
            table[spec.device_type] = spec.backend_modules
    return dict(sorted(table.items()))


def _backends_for(device_type: str, devices: Mapping[str, TargetDevice]) -> tuple[str, ...]:
    return backend_table(devices).get(device_type, ())
