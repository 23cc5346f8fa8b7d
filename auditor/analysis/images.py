"""What the container, cluster and launcher rules share: the image, runtime and launcher tables
of rules/images.toml, compiled once per catalogue, and each target's own image, image patterns and
Dockerfile names from the target registry (rules/targets.toml)."""

from __future__ import annotations

import re
from functools import lru_cache

from auditor import targets
from auditor.catalogue import Catalogue


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
    """"rocm: rocm/pytorch:latest; xpu: ...": each target's `image`."""
    return "; ".join(f"{t.name}: {t.image}" for t in targets.registry().targets if t.image)


def alternative_targets(image: str, catalogue: Catalogue) -> set[str]:
    """The targets an image serves by its name (rocm/pytorch -> rocm): each target's `image_pattern`."""
    reference = image.lower()
    if nvidia_image(reference, catalogue) is not None:
        return set()
    return {t.name for t in targets.registry().targets if t.image_pattern and re.search(t.image_pattern, reference)}


def runtime_table(catalogue: Catalogue) -> dict:
    return catalogue.table("images").get("runtime", {})


def named_targets(file_name: str, catalogue: Catalogue) -> set[str]:
    """The targets a Dockerfile's name says it builds for (Dockerfile.rocm -> rocm): each target's `dockerfile`."""
    name = file_name.lower()
    return {t.name for t in targets.registry().targets if t.dockerfile and re.search(t.dockerfile, name)}
