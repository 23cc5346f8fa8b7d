"""Step 1's question for a dependency finding: which package it is, and what replaces it on a
target (rules/packages.toml [package.targets]; wheel indexes, base images and device requests
from the target registry)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from auditor import targets
from auditor.catalogue import load_table
from auditor.model import Finding
from auditor.plan.signals import normal

_NAME = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*):\s")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Dependency rules that are about the build or the image, not a package: what the registry says instead.
# (what the plan calls it, the registry fields to try in order)
REGISTRY_FIELDS = {"cuda-torch-build": ("torch without the +cuXXX label", ("wheel_index", "install")),
                   "cuda-wheel-index": ("the torch wheel index", ("wheel_index", "install")),
                   "nvidia-base-image": ("the base image", ("image",)),
                   "nvidia-container-runtime": ("the device request", ("container",))}


@dataclass(frozen=True)
class Row:
    rule: str
    names: frozenset[str]
    patterns: tuple[re.Pattern, ...]
    replacements: dict[str, str]

    def matches(self, name: str) -> bool:
        key = normal(name)
        return key in self.names or any(p.fullmatch(key) for p in self.patterns)


@cache
def _rows() -> tuple[Row, ...]:
    return tuple(Row(row.get("rule", ""), frozenset(map(normal, row.get("names", []))),
                     tuple(re.compile(p) for p in row.get("patterns", [])), dict(row.get("targets", {})))
                 for row in load_table("packages").get("package", []))


def package_of(finding: Finding) -> tuple[str, Row | None]:
    """The package a dependency finding is about (the name its suggestion starts with, else the
    first name in its line that a row of its rule knows) and that row."""
    rows = [row for row in _rows() if row.rule == finding.name]
    named = _NAME.match(finding.suggestion)
    candidates = ([named.group(1)] if named else []) + _TOKEN.findall(finding.snippet)
    for candidate in candidates:
        for row in rows:
            if row.matches(candidate.split("==")[0]):
                return candidate, row
    return (named.group(1) if named else finding.name), None


def replacement(finding: Finding, target: str) -> tuple[str, str | None]:
    """(what the finding is about, what replaces it on `target`; None when the catalogue does not say)."""
    fields = REGISTRY_FIELDS.get(finding.name)
    if fields is not None:
        what, keys = fields
        chosen = targets.get(target)
        value = next((getattr(chosen, key).strip() for key in keys if getattr(chosen, key, "").strip()), None)
        return what, value or f"no index of its own: see step 3 (install) for {target}"
    name, row = package_of(finding)
    if row is None:
        return name, None
    return name, row.replacements.get(target)
