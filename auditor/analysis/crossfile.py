"""Contexts only the whole scan can tell, applied to the findings after every file is checked
(cheap: it looks at the kernel findings only, and runs on cached results too).

A CUDA source file is as optional as the builds that compile it: when every extension build in
the folders above it (a `load(...)` in the package, a `CUDAExtension` in setup.py) is an optional
fast path with a fallback, the kernel is too. A file name in `package_data` builds nothing; a
kernel with no build in sight keeps its own context."""

from __future__ import annotations

import posixpath
from dataclasses import replace

from auditor.catalogue import load_table
from auditor.model import Effect, Finding, Severity

SOURCE_RULE = "cuda-source-file"
BUILD_RULE = "cuda-extension-build"


def _contexts(finding: Finding) -> set[str]:
    return set((finding.context or "").split("+")) - {""}


def _above(build: Finding, folder: str) -> bool:
    here = posixpath.dirname(build.path)
    return here == "" or folder == here or folder.startswith(here + "/")


def link_kernel_sources(findings: list[Finding]) -> list[Finding]:
    """`findings` with each CUDA source file placed in the context of the builds that compile it."""
    builds = [f for f in findings if f.name == BUILD_RULE and "display" not in _contexts(f)]
    if not builds or not any(f.name == SOURCE_RULE for f in findings):
        return findings
    linked = []
    for finding in findings:
        if finding.name == SOURCE_RULE and "optional" not in _contexts(finding):
            folder = posixpath.dirname(finding.path)
            compiling = [b for b in builds if _above(b, folder)]
            if compiling and all("optional" in _contexts(b) for b in compiling):
                finding = _optional(finding, min(compiling, key=lambda b: (b.path, b.line)))
        linked.append(finding)
    return linked


def _optional(finding: Finding, build: Finding) -> Finding:
    effects = {t: (Effect.DEGRADES.value if e == Effect.RAISES.value else e) for t, e in finding.targets.items()}
    severity = finding.severity
    if Severity(severity).rank > Severity.MINOR.rank:
        severity = Severity.MINOR.value  # catalogue 5.2: a blocker until there is a fallback, then minor
    order = load_table("contexts").get("order", [])
    names = sorted({"optional", *_contexts(finding)}, key=lambda n: order.index(n) if n in order else len(order))
    context = "+".join(names)
    return replace(
        finding, targets=effects, severity=severity, context=context,
        message=f"{finding.message} It is compiled only by an optional build with a fallback "
                f"({build.path}:{build.line}): where it is missing, the fallback runs instead.",
        suggestion=f"Already optional: keep the fallback tested on every target. {finding.suggestion}")
