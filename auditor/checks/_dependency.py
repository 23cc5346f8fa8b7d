"""What the dependency rules (LK5xx) share: the file kinds they read, the package table of
rules/packages.toml and how a finding says where a requirement was declared."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from auditor import targets as registry
from auditor.checks.base import Rule
from auditor.context import FileContext, PythonContext
from auditor.model import Category
from auditor.readers import Located, Requirement
from auditor.readers.dependencies import read_dependencies

SCOPE_NOTE = (" Nothing is reported in a requirements file or folder, extra or dependency group named for CUDA "
              "(requirements/cuda.txt, requirements-cu121.txt, extra `cuda`) or for TensorRT "
              "(requirements/trt_llm.txt): that is where CUDA-only dependencies belong.")
DEPENDENCY_KINDS = frozenset({"requirements", "pyproject", "setup-cfg", "setup-py", "conda", "dockerfile", "shell",
                              "notebook"})
# Kinds whose own file name can say "the CUDA variant" (Dockerfile.cuda, environment-cuda.yml, install_cu121.sh).
_NAMED_VARIANTS = frozenset({"requirements", "conda", "dockerfile", "shell"})
ALL = "all"  # in a [package.targets] table: every target it does not name
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_VERSION = re.compile(r"(?:>=|==|~=|===|>|\^|~)\s*v?(\d{1,9}(?:\.\d{1,9})*)")  # int() refuses 4,300 digits


def report(ctx: FileContext, rule: Rule, item: Located, **fields: Any) -> None:
    """Report `item` in the file it was written in (an included requirements file keeps its own path).
    An item in an extra or dependency group is optional: the base install does without it."""
    group = getattr(item, "group", None)
    if group:  # whatever its name (dev, test, gpu): the base install does without it
        kind = "dependency group" if getattr(item, "origin", "") in ("dependency-groups", "tool.poetry.group") \
            else "optional extra"
        fields["__optional"] = ("dependency", f"the {kind} `{group}`")

    if item.node is not None and isinstance(ctx, PythonContext):
        ctx.report(rule, item.node, **fields)
        return
    owner = item.owner or ctx
    ctx.findings.append(owner.make_finding(rule, item.line, item.column, item.end_line, item.end_column, fields))


@dataclass(frozen=True)
class PackageEntry:
    rule: str
    names: frozenset[str]
    patterns: tuple[re.Pattern, ...]
    what: str
    action: str
    targets: dict[str, str]
    extras: re.Pattern | None = None
    pinned_only: bool = False
    portable_from: tuple[int, ...] | None = None
    unless: re.Pattern | None = None  # a version or URL naming another target's build
    managers: frozenset[str] | None = None  # {"conda"}: only dependencies of these package managers
    effects: tuple[tuple[str, str], ...] = ()  # per-target effects when they differ from the rule's
    support: str = ""  # where it runs, for messages that say so

    def accepts(self, req: Requirement) -> bool:
        if self.managers is not None and (req.origin if req.origin == "conda" else "pip") not in self.managers:
            return False
        if self.extras is not None and not any(self.extras.search(e.lower()) for e in req.extras):
            return False
        if self.pinned_only and not (req.specifier or req.url):
            return False
        if self.unless is not None and self.unless.search(f"{req.specifier} {req.url or ''}"):
            return False
        return not (self.portable_from and _lower_bound(req.specifier) >= self.portable_from)

    def alternatives(self) -> str:
        """"rocm: X; tpu, mps: Y": targets sharing an alternative are listed together; `all` is the
        alternative of every target the table does not name."""
        every = registry.names()
        grouped: dict[str, list[str]] = {}
        for target in every:
            alternative = self.targets.get(target) or self.targets.get(ALL)
            if alternative:
                grouped.setdefault(alternative, []).append(target)
        if len(grouped) == 1 and len(next(iter(grouped.values()))) == len(every):
            return f"On every target: {next(iter(grouped))}"
        return "Per target: " + "; ".join(f"{', '.join(targets)}: {alt}" for alt, targets in grouped.items())


def _lower_bound(specifier: str) -> tuple[int, ...]:
    """The smallest version a specifier (PEP 440 or Poetry) allows; () when unbounded below."""
    bounds = [tuple(int(p) for p in m.group(1).split(".")) for m in _VERSION.finditer(specifier)]
    return max(bounds) if bounds else ()


def _build(table: dict) -> tuple[PackageEntry, ...]:
    entries = []
    for row in table.get("package", []):
        extras, unless = row.get("extras"), row.get("unless")
        portable = row.get("portable_from")
        entries.append(PackageEntry(
            rule=row["rule"], names=frozenset(row.get("names", ())),
            patterns=tuple(re.compile(p) for p in row.get("patterns", ())),
            what=row.get("what", ""), action=row.get("action", ""), targets=dict(row.get("targets", {})),
            extras=re.compile(extras) if extras else None, pinned_only=bool(row.get("pinned_only")),
            portable_from=tuple(int(p) for p in portable.split(".")) if portable else None,
            unless=re.compile(unless) if unless else None,
            managers=frozenset(row["managers"]) if row.get("managers") else None,
            effects=tuple(sorted(registry.resolve(row.get("effects", {})).items())), support=row.get("support", ""),
        ))
    return tuple(entries)


_CACHE: dict[int, tuple[dict, tuple[PackageEntry, ...]]] = {}


def package_entries(ctx: FileContext) -> tuple[PackageEntry, ...]:
    """The [[package]] rows of rules/packages.toml, compiled once per catalogue."""
    table = ctx.catalogue.table("packages")
    cached = _CACHE.get(id(table))
    if cached is None or cached[0] is not table:
        cached = _CACHE[id(table)] = (table, _build(table))
    return cached[1]


@dataclass(frozen=True)
class _Index:
    entries: tuple[PackageEntry, ...]
    by_name: dict[str, list[PackageEntry]]  # in table order
    patterned: list[PackageEntry]  # in table order
    any_pattern: re.Pattern | None  # one regex for every pattern: most names match none


_INDEX: dict[int, _Index] = {}


def _indexed(entries: tuple[PackageEntry, ...]) -> _Index:
    """The entries indexed once per table: every requirement went through every entry (a
    configuration adding 40,000 packages took 150 s; issue 20, D18)."""
    index = _INDEX.get(id(entries))
    if index is None or index.entries is not entries:
        by_name: dict[str, list[PackageEntry]] = {}
        for entry in entries:
            for name in entry.names:
                by_name.setdefault(name, []).append(entry)
        patterned = [e for e in entries if e.patterns]
        sources = [f"(?:{p.pattern})" for e in patterned for p in e.patterns]
        try:
            any_pattern = re.compile("|".join(sources)) if sources else None
        except re.error:  # a pattern that cannot be joined (inline flags): every name is tried
            any_pattern = re.compile("(?s:.*)")
        index = _INDEX[id(entries)] = _Index(entries, by_name, patterned, any_pattern)
    return index


def match_package(req: Requirement, entries: tuple[PackageEntry, ...]) -> PackageEntry | None:
    """The table entry for a requirement: exact names first, then patterns, in table order."""
    if not req.key:
        return None
    index = _indexed(entries)
    for entry in index.by_name.get(req.key, ()):
        if entry.accepts(req):
            return entry
    if index.any_pattern is None or index.any_pattern.fullmatch(req.key) is None:
        return None
    for entry in index.patterned:
        if any(p.fullmatch(req.key) for p in entry.patterns) and entry.accepts(req):
            return entry
    return None


def where(req: Requirement) -> str:
    """" in optional extra `gpu`, only where `sys_platform == "linux"`" and the like."""
    notes = []
    if req.group:
        kind = "dependency group" if req.origin in ("dependency-groups", "tool.poetry.group") else "optional extra"
        notes.append(f"in {kind} `{req.group}`")
    elif req.origin in ("build-system.requires", "setup_requires"):
        notes.append("as a build requirement")
    if req.marker:
        notes.append(f"only where `{req.marker}`")
    return (" (" + ", ".join(notes) + ")") if notes else ""


def cuda_scoped(ctx: FileContext, item: Located) -> bool:
    """Whether the item sits where CUDA-only dependencies belong: a requirements file or folder, an
    extra or a dependency group named for CUDA (requirements/cuda.txt, extra "cu121")."""
    pattern = ctx.catalogue.table("packages").get("scope", {}).get("cuda")
    if not pattern:
        return False
    scope = re.compile(pattern, re.IGNORECASE)
    names = []
    owner = item.owner or ctx
    if owner.kind in _NAMED_VARIANTS:
        parts = owner.path.replace("\\", "/").split("/")
        names.append(parts[-1].rsplit(".", 1)[0])
        names.append(parts[-1])  # Dockerfile.cuda
        if len(parts) > 1:
            names.append(parts[-2])
    names.append(getattr(item, "group", None) or "")
    marker = getattr(item, "marker", None) or ""
    names.extend(_EXTRA_MARKER.findall(marker))
    return any(name and scope.search(name) for name in names)


class DependencyRule(Rule):
    """A rule over declared dependencies (requirements files, pyproject.toml, setup.cfg, setup.py)."""

    category = Category.DEPENDENCY
    file_kinds = DEPENDENCY_KINDS


class PackageRule(DependencyRule):
    """Reports the requirements whose package-table entry names this rule."""
    fields = frozenset({"package", "where", "what", "action", "alternatives", "support"})

    subject: ClassVar[str] = "`{package}`"

    message: ClassVar[str] = "`{package}`: {what}{where}."
    support: ClassVar[str] = ""  # the default `{support}` of the rule's message
    suggestion: ClassVar[str] = "{package}: {action}. {alternatives}."

    def check_file(self, ctx: FileContext) -> None:
        entries = package_entries(ctx)
        for req in read_dependencies(ctx).requirements:
            entry = match_package(req, entries)
            if entry is not None and entry.rule == self.name and not cuda_scoped(ctx, req):
                extra = {"__effects": dict(entry.effects)} if entry.effects else {}
                report(ctx, self, req, package=req.name or req.key, what=entry.what, where=where(req),
                       action=entry.action, alternatives=entry.alternatives(),
                       support=entry.support or self.support, **extra)
