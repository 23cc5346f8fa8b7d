"""Contexts only the whole scan can tell, applied to the findings after every file is checked
(cheap: it looks at the kernel findings only, and runs on cached results too).

A CUDA source file is as optional as the builds that compile it: when every extension build in
the folders above it (a `load(...)` in the package, a `CUDAExtension` in setup.py) is an optional
fast path with a fallback, the kernel is too. A file name in `package_data` builds nothing; a
kernel with no build in sight keeps its own context.

A module of the project is as optional as its imports: when every import of it the scan reports
(the project's own GPU modules are: context `own-package`) sits under a fallback or a guard
(whisper's `try: from .triton_ops import ...` in timing.py), its failures degrade instead.

A per-device dispatch's CUDA branch is not taken on a target no dispatch of the project chooses:
there the project's device value is the host's (Lightning on XPU trains on the CPU).

An NVIDIA-only dependency is as required as its imports: when every import of it the scan reports is
optional (mamba's quack-kernels, imported only by a module mamba3.py imports under try/except), the
package installs unused where that code is skipped."""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from auditor import targets
from auditor.catalogue import load_catalogue, load_table
from auditor.model import Effect, Finding, Severity, cap_effect

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


def _optional(finding: Finding, build: Finding | None, why: str = "") -> Finding:
    effects = {t: cap_effect(e) for t, e in finding.targets.items()}
    severity = finding.severity
    if Severity(severity).rank > Severity.MINOR.rank:
        severity = Severity.MINOR.value  # catalogue 5.2: a blocker until there is a fallback, then minor
    order = load_table("contexts").get("order", [])
    names = sorted({"optional", *_contexts(finding)}, key=lambda n: order.index(n) if n in order else len(order))
    context = "+".join(names)
    return replace(
        finding, targets=effects, severity=severity, context=context,
        message=f"{finding.message} " + (why or f"It is compiled only by an optional build with a fallback "
                                                 f"({build.path}:{build.line}): where it is missing, the fallback "
                                                 "runs instead."),
        suggestion=f"Already optional: keep the fallback tested on every target. {finding.suggestion}")


def link_unchosen_targets(findings: list[Finding]) -> list[Finding]:
    """`findings` with the CUDA branch of each per-device dispatch that has a host branch
    (`flag if flag in ("cpu", "mps") else "cuda"`) degrading, not raising, on the targets no dispatch
    of the scan gives a branch: the project never chooses their device, so a machine with one takes
    the host's branch (Lightning, which ships no XPU accelerator, trains on the CPU there)."""
    dispatches = [f for f in findings if "dispatch" in (f.guard or "").split("+") and "test" not in _contexts(f)]
    if not dispatches:
        return findings  # the common case
    hosts = targets.with_role("host")
    # a branch serves a target where the dispatch tells targets apart: one whose code works
    # everywhere (an XLA-only block, skipped elsewhere) serves none in particular
    chosen = {t for f in dispatches if set(f.targets.values()) != {Effect.WORKS.value}
              for t, effect in f.targets.items() if effect == Effect.WORKS.value}
    linked = []
    for finding in findings:
        if "dispatch" in (finding.guard or "").split("+") and "test" not in _contexts(finding) \
                and hosts and all(finding.targets.get(h) == Effect.WORKS.value for h in hosts):
            unchosen = [t for t, e in finding.targets.items() if e == Effect.RAISES.value and t not in chosen]
            if unchosen:
                finding = _unchosen(finding, unchosen, hosts)
        linked.append(finding)
    return linked


def _unchosen(finding: Finding, unchosen: list[str], hosts: tuple[str, ...]) -> Finding:
    effects = {t: (cap_effect(e) if t in unchosen else e) for t, e in finding.targets.items()}
    severity = finding.severity
    if Effect.RAISES.value not in effects.values() and Severity(severity).rank > Severity.MINOR.rank:
        severity = Severity.MINOR.value  # nothing raises any more: as a guarded tie
    text = load_table("contexts").get("unchosen", {}).get("message", "{targets}: no dispatch of the project chooses them.")
    message = text.format(targets=targets.displays(unchosen), host=targets.displays(list(hosts)))
    return replace(finding, targets=effects, severity=severity, message=f"{finding.message} {message}")


_FROM = re.compile(r"\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([\w\s,]*)")
_IMPORT = re.compile(r"\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)")
_GATED = frozenset({"optional", "guarded"})
_KEEP = frozenset({"test", "demo", "optional", "own-package", "redundant"})


def _imported(finding: Finding) -> list[str]:
    """The module paths (no suffix, POSIX) an import finding's first line may name: `from .x import
    a` in pkg/m.py -> pkg/x and pkg/x/a; `import pkg.x` -> pkg/x (matched as a path ending)."""
    snippet = finding.snippet
    found = _FROM.match(snippet)
    if found is not None:
        dots, module, names = found.groups()
        base = module.replace(".", "/")
        if dots:
            folder = posixpath.dirname(finding.path)
            for _ in range(len(dots) - 1):
                folder = posixpath.dirname(folder)
            base = posixpath.join(folder, base) if base else folder
        members = [n.strip() for n in names.split(",") if n.strip().isidentifier()]
        return [b for b in (base, *(posixpath.join(base, n) for n in members)) if b]
    found = _IMPORT.match(snippet)
    return [m.strip().replace(".", "/") for m in found.group(1).split(",")] if found is not None else []


def _module_of(path: str) -> str:
    stem = path.removesuffix(".py")
    return stem.removesuffix("/__init__")


def link_optional_modules(findings: list[Finding]) -> list[Finding]:
    """`findings` with the findings of each module the project imports only under a fallback or a
    guard made optional (raises -> degrades)."""
    imports = [f for f in findings if "own-package" in _contexts(f)]
    if not any(_GATED & _contexts(f) for f in imports):
        return findings  # the common case: no own module imported under a fallback
    modules = {_module_of(f.path) for f in findings if f.path.endswith(".py")}
    sites: dict[str, list[Finding]] = {}
    for site in imports:
        for name in _imported(site):
            for module in modules:
                if module == name or module.endswith("/" + name):
                    sites.setdefault(module, []).append(site)
    gated = {module: min(found, key=lambda f: (f.path, f.line)) for module, found in sites.items()
             if all((_GATED | {"feature"}) & _contexts(f) for f in found)}
    if not gated:
        return findings
    chosen = {module for module, found in sites.items() if module in gated
              and all("feature" in _contexts(f) for f in found)}
    linked = []
    for finding in findings:
        module = _module_of(finding.path) if finding.path.endswith(".py") else ""
        site = gated.get(module)
        if site is None or _KEEP & _contexts(finding) or "feature" in _contexts(finding):
            pass
        elif module in chosen:
            finding = _feature(finding, site)
        elif "raises" in finding.targets.values():
            finding = _optional(finding, None, f"Its module is imported only under a fallback or a guard "
                                               f"({site.path}:{site.line}): where that import is skipped or fails, "
                                               f"the code around it runs instead.")
        linked.append(finding)
    return linked


def _feature(finding: Finding, site: Finding) -> Finding:
    """A finding of a module imported only in the branches of choices by name: that backend's, an
    opt-in feature (its effects stand: the feature's own verdict says where it fails)."""
    order = load_table("contexts").get("order", [])
    names = sorted({"feature", *_contexts(finding)}, key=lambda n: order.index(n) if n in order else len(order))
    return replace(finding, context="+".join(names),
                   message=f"{finding.message} Its module is imported only in the branch of a choice by name "
                           f"({site.path}:{site.line}): an opt-in backend; the other choices run without it.")


_PACKAGE = re.compile(r"`([^`]+)`")


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def link_dependency_uses(findings: list[Finding]) -> list[Finding]:
    """`findings` with each NVIDIA-only dependency (rules/contexts.toml [dependency_uses]) as required as
    the code that imports it: on a target where every import of its modules the scan reports is
    optional, guarded or an opt-in feature (none raises there), the package installs and goes unused
    (raises -> degrades). A dependency nothing imports, or one imported on the main path, keeps its
    effects; so do the targets where its install itself fails (no wheels)."""
    contexts = load_table("contexts")
    table = contexts.get("dependency_uses", {})
    rules = frozenset(table.get("rules", ()))
    deps = {id(f) for f in findings if f.name in rules and "raises" in f.targets.values()}
    if not deps:
        return findings  # the common case: no NVIDIA-only runtime among the dependencies
    catalogue = load_catalogue()  # only now: a run served from the cache may not have parsed it
    never = frozenset(contexts.get("never_fail", ("test",)))
    uses: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.path.endswith(".py") and not never & _contexts(finding):
            module = _import_module(finding.snippet)
            entry = catalogue.lookup_api(module) if module else None
            if entry is not None and entry.package:
                uses.setdefault(_normalised(entry.package), []).append(finding)
    if not uses:
        return findings
    install_fails = frozenset(table.get("install_fails", ()))
    linked = []
    for finding in findings:
        found = _PACKAGE.match(finding.message) if id(finding) in deps else None
        imports = uses.get(_normalised(found.group(1)), []) if found is not None else []
        if imports:
            finding = _used_optionally(finding, imports, install_fails)
        linked.append(finding)
    return linked


def _import_module(snippet: str) -> str:
    """The module an import line names (`from quack.utils import x` -> quack.utils), "" for any other
    line (uses follow their import: auditor.python.scan.optional_uses)."""
    found = _FROM.match(snippet)
    if found is not None:
        return "" if found.group(1) else found.group(2)  # a relative import is the project's own
    found = _IMPORT.match(snippet)
    return found.group(1).split(",")[0].strip() if found is not None else ""


def _used_optionally(finding: Finding, imports: list[Finding], install_fails: frozenset[str]) -> Finding:
    effects = dict(finding.targets)
    for target, effect in finding.targets.items():
        if effect == Effect.RAISES.value and target not in install_fails \
                and all(f.targets.get(target) != Effect.RAISES.value for f in imports):
            effects[target] = Effect.DEGRADES.value
    if effects == finding.targets:
        return finding
    first = min(imports, key=lambda f: (f.path, f.line))
    severity = finding.severity
    if Effect.RAISES.value not in effects.values() and Severity(severity).rank > Severity.MINOR.rank:
        severity = Severity.MINOR.value  # nothing raises any longer: as _optional caps it
    unused = [t for t in effects if effects[t] != finding.targets[t]]
    return replace(
        finding, targets=effects, severity=severity,
        message=f"{finding.message} Every import of it in this code is optional (first: {first.path}:{first.line}): "
                f"on {targets.join(unused)} it installs and goes unused unless that code is chosen.",
        suggestion=f"Move it to an optional extra, since only optional code imports it. {finding.suggestion}")
