"""What a project's configuration adds to the catalogue (its `[catalogue]` table): in-house
GPU-only packages and modules the catalogue cannot know (auditor.catalogue.extended). Imported only
when a configuration has such a table (auditor.config.keys reads it)."""

# No `from __future__ import annotations`: with string annotations, @dataclass parses every field
# for ClassVar.
from dataclasses import dataclass

# The rules an in-house catalogue entry may name (the dependency and kernel-library rules).
PACKAGE_RULE = "nvidia-only-runtime-package"
MODULE_RULE = "gpu-kernel-library"


@dataclass(frozen=True)
class InHousePackage:
    """An in-house requirement the catalogue does not know: `name` is reported by `rule`."""

    name: str
    rule: str = PACKAGE_RULE
    what: str = "declared GPU-only in the project's lockin-auditor configuration"
    action: str = "keep it behind an optional extra with a portable fallback"


@dataclass(frozen=True)
class InHouseModule:
    """An in-house Python module (and everything below it) that only runs on NVIDIA GPUs."""

    name: str
    rule: str = MODULE_RULE
    replacement: str = "a portable code path, keeping this module an optional fast path for NVIDIA GPUs"
