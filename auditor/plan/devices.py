"""Which torch device a target runs on, and how a generated file tells whether it is there.

`registry_devices()` reads them from the target registry (rules/targets.toml: `device`, `label`,
`backend_modules`, `build`), so a target added there (npu) gets its parity test and benchmark with
no code; device types outside the registry that an environment override may still name are
rules/plan/plan.toml [generated.other_backends]. Nothing here imports a vendor package: the
generated files probe the device when they run (see `templates/common.py.tmpl`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache

from auditor import targets
from auditor.plan.catalogue import plan_catalogue

_DEVICE = re.compile(r"[a-z][a-z0-9_]*(?::[0-9]{1,3})?\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_BUILDS = ("cuda", "hip", "xpu")  # attributes of torch.version that name a build (as rules/targets.toml checks)


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

@cache
def registry_devices() -> dict[str, TargetDevice]:
    """Target name -> its device, for every target of the registry that names one, in report order."""
    return {t.name: TargetDevice(t.device, t.label or t.display, tuple(t.backend_modules), t.build or None)
            for t in targets.registry().targets if t.device}


@cache
def other_backends() -> dict[str, tuple[str, ...]]:
    """Device types outside the registry that the generated files know how to load (torch_xla, ...)."""
    return dict(plan_catalogue().other_backends)


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
    table = dict(other_backends())
    for spec in (*devices.values(), *extra):
        if spec.backend_modules:
            table[spec.device_type] = spec.backend_modules
    return dict(sorted(table.items()))


def _backends_for(device_type: str, devices: Mapping[str, TargetDevice]) -> tuple[str, ...]:
    return backend_table(devices).get(device_type, ())
