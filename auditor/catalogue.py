"""The rule catalogue: data that changes more often than code (API mappings, packages, env vars,
per-target effects, score weights). It lives in the top-level `rules/` folder of the source tree
and ships inside the wheel as `auditor/rules/`.

Effects are sparse: a file's `[effects]` table has a family `default` and each rule's row lists only
what differs, by target name, role or "others" (auditor.targets.resolve). The per-target tables of
rules/contexts.toml (guard words and calls, backend-module siblings) are completed from the target
registry (rules/targets.toml) as the file is read, so every reader sees one table. Whether the
whole is consistent (every rule has an effect everywhere, every row names a loaded rule, ...) is
checked once the rules are known: auditor/catalogue_check.py.

Part of the plugin API (README, Extending: plugins): plugins import `ApiEntry` from
`auditor.catalogue`; keep it importable from here (tests/test_plugin.py checks it)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import Any

from auditor.targets import FILE as TARGETS_FILE
from auditor.targets import SOURCE_PLATFORM, CatalogueError, catalogue_dir, expand, registry, resolve

__all__ = ["ApiEntry", "Catalogue", "build_catalogue", "catalogue_dir", "extended", "load_catalogue", "load_table"]
DEFAULT = "default"  # the family default row of an [effects] table


@dataclass(frozen=True)
class ApiEntry:
    """A qualified name (or a whole namespace, when `prefix`) that one rule reports."""

    name: str
    rule: str  # rule name (kebab-case)
    replacement: str = ""
    since: str | None = None  # first PyTorch version with the replacement
    prefix: bool = False  # matches `name` and everything below it
    scope: str = "all"  # all | import | ref: where the name must appear to count
    # Per-target effects of this library when they differ from its rule's ((target, effect), ...),
    # resolved from the row's names, roles and "others".
    effects: tuple[tuple[str, str], ...] = ()
    note: str = ""  # what the library is and where it runs, for the rule's message
    package: str = ""  # the distribution that provides it (its dependency-side row must agree)


@dataclass(frozen=True)
class Catalogue:
    effects: dict[str, dict[str, str]]  # rule name -> target -> effect (resolved; a gap is a catalogue error)
    apis: dict[str, ApiEntry]  # exact qualified names
    api_prefixes: dict[str, ApiEntry]  # namespaces
    raw: dict[str, Any] = field(default_factory=dict)  # every file's table, by file stem
    # Names that start alike under one module (`torch._C._cuda_*`): module -> ((start, entry), ...).
    api_stems: dict[str, tuple[tuple[str, ApiEntry], ...]] = field(default_factory=dict)
    # A project module named after a GPU library wraps it (`vllm.utils.flashinfer`): component -> library.
    wrapped: dict[str, str] = field(default_factory=dict)
    # Wrapper modules the project's configuration declares portable: nothing reached through them counts.
    portable: tuple[str, ...] = ()
    effect_files: dict[str, str] = field(default_factory=dict)  # rule name -> the file stem of its row

    def table(self, stem: str) -> dict[str, Any]:
        """The parsed TOML of `rules/<stem>.toml` (empty when missing)."""
        return self.raw.get(stem, {})

    def lookup_api(self, qualified: str) -> ApiEntry | None:
        """Longest match for a qualified name: exact first, then enclosing namespaces, then a
        wrapper module named after a GPU library (`vllm.utils.flashinfer.mm` counts as flashinfer)."""
        if self.portable and any(qualified == p or qualified.startswith(p + ".") for p in self.portable):
            return None
        entry = self.apis.get(qualified)
        if entry is not None:
            return entry
        name = qualified
        while True:
            entry = self.api_prefixes.get(name)
            if entry is not None:
                return entry
            cut = name.rfind(".")
            if cut < 0:
                break
            name = name[:cut]
        if self.api_stems:
            module, _, last = qualified.rpartition(".")
            for start, stem_entry in self.api_stems.get(module, ()):
                if last.startswith(start):
                    return stem_entry
        if self.wrapped:
            return self._wrapper_entry(qualified)
        return None

    def _wrapper_entry(self, qualified: str) -> ApiEntry | None:
        """A wrapper's import always counts; a use only when its name says the library
        (`flashinfer_scaled_fp4_mm` yes, a helper like `calc_diff` from the same module no)."""
        parts = qualified.split(".")
        for part in parts[1:-1]:
            library = self.wrapped.get(part)
            entry = self.api_prefixes.get(library) if library is not None else None
            if entry is not None:
                return entry if library in parts[-1] else replace(entry, scope="import")
        if parts[0] == "torch" and len(parts) > 3 and parts[1] == "ops":  # torch.ops.vllm.flashinfer_mm(...)
            library = next((lib for lib in self.wrapped if parts[-1].startswith(lib + "_")), None)
            if library is not None:
                return self.api_prefixes.get(library)
        return None


def _read_all() -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for path in sorted(catalogue_dir().glob("*.toml")):
        if path.name == TARGETS_FILE:
            continue  # the target registry: auditor.targets reads it
        raw[path.stem] = _read(path.stem)
    return raw


@cache
def _read(stem: str) -> dict[str, Any]:
    """One file, parsed once per process (load_table and the whole catalogue share it; readers never
    mutate what they get)."""
    path = catalogue_dir() / f"{stem}.toml"
    try:
        with path.open("rb") as handle:
            table = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"rules/{stem}.toml: {exc}") from None
    return with_registry(stem, table)


def with_registry(stem: str, table: dict[str, Any]) -> dict[str, Any]:
    """A catalogue file completed from the target registry: rules/contexts.toml gets each target's
    guard words, availability calls, helpers, attributes, test decorators and sibling-module words,
    and its lists of platforms may name roles ("accepts-cuda-calls"), expanded here."""
    if stem != "contexts":
        return table
    targets = registry().targets
    table = dict(table)
    guards = dict(table.get("guards", {}))
    for key, field_name in (("words", "words"), ("available", "available"), ("attributes", "attributes")):
        merged = {name: _platforms(platforms, f"[guards.{key}] {name}") for name, platforms in guards.get(key, {}).items()}
        for target in targets:
            for name in getattr(target, field_name):
                merged[name] = sorted({*merged.get(name, ()), target.name})
        guards[key] = merged
    guards["packages"] = {name: _platforms(platforms, f"[guards.packages] {name}")
                          for name, platforms in guards.get("packages", {}).items()}
    if "env" in guards:
        env = dict(guards["env"])
        env["names"] = {name: _platforms(platforms, f"[guards.env.names] {name}")
                        for name, platforms in env.get("names", {}).items()}
        guards["env"] = env
    for key, field_name in (("helper", "helpers"), ("flag", ""), ("requires", "requires")):
        rows = [{**row, "platforms": _platforms(row.get("platforms", []), f"[[guards.{key}]] {row.get('pattern')!r}")}
                for row in guards.get(key, [])]
        if field_name:
            mine: dict[str, list[str]] = {}
            for target in targets:
                for pattern in getattr(target, field_name):
                    mine.setdefault(pattern, []).append(target.name)
            rows += [{"pattern": pattern, "platforms": names} for pattern, names in mine.items()]
        guards[key] = rows
    table["guards"] = guards
    backend = dict(table.get("backend_modules", {}))
    siblings = {t.name: list(t.siblings) for t in targets if t.siblings}
    siblings["others"] = list(backend.get("siblings", {}).get("others", ()))
    backend["siblings"] = siblings
    table["backend_modules"] = backend
    return table


def _platforms(items: list[str], where: str) -> list[str]:
    try:
        return sorted(expand(items))
    except KeyError as exc:
        raise CatalogueError(f"rules/contexts.toml {where}: {exc.args[0]!r} is neither {SOURCE_PLATFORM!r}, a target "
                             f"nor a role (rules/targets.toml)") from None


def build_catalogue(raw: dict[str, Any]) -> Catalogue:
    effects: dict[str, dict[str, str]] = {}
    effect_files: dict[str, str] = {}
    apis: dict[str, ApiEntry] = {}
    prefixes: dict[str, ApiEntry] = {}
    stems: dict[str, list[tuple[str, ApiEntry]]] = {}
    wrapped: dict[str, str] = {}
    for stem, table in raw.items():
        rows = table.get("effects", {})
        default = rows.get(DEFAULT)
        for name, row in rows.items():
            if name != DEFAULT and isinstance(row, dict):
                effects[name] = resolve((row, default) if isinstance(default, dict) else (row,))
                effect_files[name] = stem
        wrapped.update({name: name for name in table.get("wrapped_libraries", ())})
        for item in table.get("api", []):
            name = item["name"]
            is_stem = name.endswith("*") and not name.endswith(".*")  # torch._C._cuda_*: a name start
            is_prefix = name.endswith(".*")
            entry = ApiEntry(
                name=name[:-2] if is_prefix else name,
                rule=item["rule"],
                replacement=item.get("replacement", ""),
                since=item.get("since"),
                prefix=is_prefix,
                scope=item.get("scope", "all"),
                effects=tuple(sorted(resolve(item.get("effects", {})).items())),
                note=item.get("note", ""),
                package=item.get("package", ""),
            )
            if is_stem:
                module, _, start = name[:-1].rpartition(".")
                stems.setdefault(module, []).append((start, replace(entry, name=name[:-1])))
                continue
            (prefixes if is_prefix else apis)[entry.name] = entry
    return Catalogue(effects=effects, apis=apis, api_prefixes=prefixes, raw=raw, wrapped=wrapped,
                     api_stems={module: tuple(items) for module, items in stems.items()}, effect_files=effect_files)


def extended(base: Catalogue, packages: tuple = (), modules: tuple = (), portable: tuple[str, ...] = ()) -> Catalogue:
    """`base` plus a project's own entries (auditor.config.entries InHousePackage / InHouseModule): in-house
    GPU-only packages come first in the package table, in-house GPU-only modules are namespaces
    of their rule, portable wrapper modules are never reported."""
    key = (id(base), packages, modules, portable)
    cached = _EXTENDED.get(key)
    if cached is not None and cached[0] is base:
        return cached[1]
    raw = dict(base.raw)
    if packages:
        # only a configuration that adds packages needs it: a warm run loads no reader
        from auditor.readers import normalize

        table = dict(raw.get("packages", {}))
        rows = [{"rule": p.rule, "names": [normalize(p.name)], "what": p.what, "action": p.action, "targets": {}}
                for p in packages]
        table["package"] = rows + list(table.get("package", []))
        raw["packages"] = table
    if modules:
        raw["__project__"] = {"api": [{"name": m.name + ".*", "rule": m.rule, "replacement": m.replacement}
                                      for m in modules]}
    result = replace(build_catalogue(raw), portable=tuple(portable))
    _EXTENDED[key] = (base, result)
    return result


_EXTENDED: dict[tuple, tuple[Catalogue, Catalogue]] = {}


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    return build_catalogue(_read_all())


@cache
def load_table(stem: str) -> dict[str, Any]:
    """One catalogue file (`scoring`, `verdicts`, `contexts`): what a run served from the cache
    needs for its score, verdicts and cache keys, without parsing the whole catalogue."""
    if load_catalogue.cache_info().currsize:
        return load_catalogue().table(stem)
    try:
        return _read(stem)  # the full load later reuses this parse
    except FileNotFoundError:
        return {}


def catalogue_fingerprint() -> str:
    """A digest of every catalogue file, for cache keys."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(catalogue_dir().glob("*.toml")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=16)
def labelled_patterns(table: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """A catalogue table of label -> regular expression (`[cuda_source_features]`,
    `[system_packages.patterns]`), compiled once: ((label, pattern), ...) in the table's order."""
    return tuple((label, re.compile(pattern)) for label, pattern in table)
