"""What the container, cluster and launcher rules share: the image, runtime and launcher tables
of rules/images.toml, compiled once per catalogue."""

from __future__ import annotations

import re
from functools import lru_cache

from auditor.catalogue import Catalogue
from auditor.model import TARGETS


@lru_cache(maxsize=4)
def _images(table_id: int, rows: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), what) for pattern, what in rows)


def nvidia_image(image: str, catalogue: Catalogue) -> str | None:
    """What makes `image` NVIDIA-only ("an NVIDIA CUDA base image"), or None."""
    table = catalogue.table("images")
    rows = tuple((row["pattern"], row.get("what", "")) for row in table.get("image", []))
    reference = image.lower()
    for pattern, what in _images(id(table), rows):
        if pattern.search(reference):
            return what
    return None


def alternatives(catalogue: Catalogue) -> str:
    """"rocm: rocm/pytorch:latest; xpu: ..." from [alternatives]."""
    table = catalogue.table("images").get("alternatives", {})
    return "; ".join(f"{target}: {table[target]}" for target in TARGETS if target in table)


def alternative_targets(image: str, catalogue: Catalogue) -> set[str]:
    """The targets an image serves by its name (rocm/pytorch -> rocm), from [alternative_patterns]."""
    table = catalogue.table("images").get("alternative_patterns", {})
    reference = image.lower()
    if nvidia_image(reference, catalogue) is not None:
        return set()
    return {target for target, pattern in table.items() if re.search(pattern, reference)}


def runtime_table(catalogue: Catalogue) -> dict:
    return catalogue.table("images").get("runtime", {})


def named_targets(file_name: str, catalogue: Catalogue) -> set[str]:
    """The targets a Dockerfile's name says it builds for (Dockerfile.rocm -> rocm), from [alternative_names]."""
    table = catalogue.table("images").get("alternative_names", {})
    name = file_name.lower()
    return {target for target, pattern in table.items() if re.search(pattern, name)}
