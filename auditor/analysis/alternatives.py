"""A repository that builds images for several targets is not NVIDIA-only because one of them is
a CUDA image. After a scan, each `nvidia-base-image` finding gets "works" on every target for which
some Dockerfile of the repository builds an image: one named for the target (`Dockerfile.rocm`,
rules/targets.toml `dockerfile`) whose last stage is not an NVIDIA image, or one whose last
stage derives from the target's image (`rocm/pytorch` for ROCm, `python:3.11-slim` for the CPU;
`image_pattern`). Without one the finding keeps "raises" everywhere: the container runs only
on NVIDIA.

It runs on every scan, warm ones included (cached findings keep the per-file effects), only when
the scan has such a finding. What each Dockerfile serves is kept in the cache's meta, keyed by its
size and mtime, so a warm run stats the Dockerfiles instead of reading them."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from auditor.catalogue import load_catalogue
from auditor.discover.files import SourceFile
from auditor.model import FileResult, Finding
from auditor.read.text import SourceError, decode_text, read_regular_file

if TYPE_CHECKING:
    from auditor.cache.results import Cache

RULE = "nvidia-base-image"
META = "alternatives"
_MAX_BYTES = 1024 * 1024


def served_for(results: list[FileResult | None], files: list[SourceFile], cache: Cache | None) -> set[str] | None:
    """The targets the repository's Dockerfiles serve; None when no result holds an NVIDIA image."""
    if not any(f.name == RULE for result in results if result is not None for f in result.findings):
        return None
    return served_targets(files, cache)


def served_targets(files: list[SourceFile], cache: Cache | None = None) -> set[str]:
    """Targets some Dockerfile's final stage is built for."""
    known = cache.meta.get(META) if cache is not None else None
    known = known if isinstance(known, dict) else {}
    fresh: dict[str, list] = {}
    served: set[str] = set()
    for source in files:
        if source.kind != "dockerfile":
            continue
        try:
            info = os.stat(source.path)
        except OSError:
            continue
        entry = known.get(source.display)
        if isinstance(entry, list) and len(entry) == 3 and entry[:2] == [info.st_size, info.st_mtime_ns]:
            targets = set(entry[2])
        else:
            targets = _targets(source, info.st_size)
        served |= targets
        if cache is None or cache.settled(info.st_mtime_ns):
            fresh[source.display] = [info.st_size, info.st_mtime_ns, sorted(targets)]
    if cache is not None and fresh != known:
        cache.meta[META] = fresh
        cache.dirty = True
    return served


def _targets(source: SourceFile, size: int) -> set[str]:
    # only a scan with an NVIDIA base-image finding reads the other Dockerfiles
    from auditor.analysis.images import alternative_targets, named_targets, nvidia_image
    from auditor.readers.dockerfile import final_image

    if size > _MAX_BYTES:
        return set()
    try:  # a regular file only (a FIFO named Dockerfile would block a plain open), never a link
        image = final_image(decode_text(read_regular_file(source.path, _MAX_BYTES)))
    except SourceError:
        return set()
    catalogue = load_catalogue()
    if not image or nvidia_image(image, catalogue) is not None:
        return set()
    return named_targets(os.path.basename(source.display), catalogue) or alternative_targets(image, catalogue)


def with_alternatives(findings: list[Finding], served: set[str] | None) -> list[Finding]:
    """The findings, with "works" on the served targets for the NVIDIA image findings."""
    if not served:
        return findings
    return [replace(f, targets={t: ("works" if t in served else e) for t, e in f.targets.items()})
            if f.name == RULE else f for f in findings]
