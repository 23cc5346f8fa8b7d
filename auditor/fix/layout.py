"""The per-target dependency layout that the dependency rules' display fixes show (catalogue
Q01/Q02): one requirements file per target with the index that serves its build. The CUDA file is
in the `[layout]` table of rules/fixes.toml, each target's index and install note in the target
registry (rules/targets.toml `wheel_index`, `install`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from auditor import targets

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue

_CUDA_DIGITS = re.compile(r"cu(?:da)?(\d{2,3})", re.IGNORECASE)


def per_target_layout(catalogue: Catalogue, cuda_index: str | None = None, label: str = "") -> str:
    """"requirements-cuda.txt: `--index-url .../cu121`; requirements-rocm.txt: ...; macOS (MPS): PyPI"."""
    table = catalogue.table("fixes").get("layout", {})
    if cuda_index is None:
        digits = _CUDA_DIGITS.search(label)
        template = table.get("default_cuda_index", "https://download.pytorch.org/whl/cu{cuda}")
        cuda_index = template.format(cuda=digits.group(1) if digits else "XYZ")
    parts = [f"{name}: `--index-url {url.format(cuda_index=cuda_index)}`" for _, name, url in table.get("files", ())]
    every = targets.registry().targets
    parts += [f"requirements-{t.name}.txt: `--index-url {t.wheel_index}`{t.install}" for t in every if t.wheel_index]
    parts += [f"{t.display}: {t.install}" for t in every if t.install and not t.wheel_index]  # no index of its own
    return "; ".join(parts)
