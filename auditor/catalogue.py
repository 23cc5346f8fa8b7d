"""The rule catalogue: data that changes more often than code (API mappings, packages, env vars,
per-target effects, score weights). It lives in the top-level `rules/` folder of the source tree
and ships inside the wheel as `auditor/rules/`.

Part of the plugin API (README, Extending: plugins): plugins import `ApiEntry` from
`auditor.catalogue`; keep it importable from here (tests/test_plugin.py checks it)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any


def catalogue_dir() -> Path:
    """Where the TOML files are: inside the installed package, else in the source checkout."""
    installed = Path(__file__).resolve().parent / "rules"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "rules"


@dataclass(frozen=True)
class ApiEntry:
    """A qualified name (or a whole namespace, when `prefix`) that one rule reports."""

    name: str
    rule: str  # rule name (kebab-case)
    replacement: str = ""
    since: str | None = None  # first PyTorch version with the replacement
    prefix: bool = False  # matches `name` and everything below it
    scope: str = "all"  # all | import | ref: where the name must appear to count
    # Per-target effects of this library when they differ from its rule's ((target, effect), ...).
    effects: tuple[tuple[str, str], ...] = ()
    note: str = ""  # what the library is and where it runs, for the rule's message
    package: str = ""  # the distribution that provides it (its dependency-side row must agree)


@dataclass(frozen=True)
class Catalogue:
    effects: dict[str, dict[str, str]]  # rule name -> target -> effect
    apis: dict[str, ApiEntry]  # exact qualified names
    api_prefixes: dict[str, ApiEntry]  # namespaces
    raw: dict[str, Any] = field(default_factory=dict)  # every file's table, by file stem
    # Names that start alike under one module (`torch._C._cuda_*`): module -> ((start, entry), ...).
    api_stems: dict[str, tuple[tuple[str, ApiEntry], ...]] = field(default_factory=dict)
    # A project module named after a GPU library wraps it (`vllm.utils.flashinfer`): component -> library.
    wrapped: dict[str, str] = field(default_factory=dict)
    # Wrapper modules the project's configuration declares portable: nothing reached through them counts.
    portable: tuple[str, ...] = ()

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


def _read_all(directory: Path) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for path in sorted(directory.glob("*.toml")):
        with path.open("rb") as handle:
            raw[path.stem] = tomllib.load(handle)
    return raw


def build_catalogue(raw: dict[str, Any]) -> Catalogue:
    effects: dict[str, dict[str, str]] = {}
    apis: dict[str, ApiEntry] = {}
    prefixes: dict[str, ApiEntry] = {}
    stems: dict[str, list[tuple[str, ApiEntry]]] = {}
    wrapped: dict[str, str] = {}
    for table in raw.values():
        effects.update(table.get("effects", {}))
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
                effects=tuple(sorted(item.get("effects", {}).items())),
                note=item.get("note", ""),
                package=item.get("package", ""),
            )
            if is_stem:
                module, _, start = name[:-1].rpartition(".")
                stems.setdefault(module, []).append((start, replace(entry, name=name[:-1])))
                continue
            (prefixes if is_prefix else apis)[entry.name] = entry
    return Catalogue(effects=effects, apis=apis, api_prefixes=prefixes, raw=raw, wrapped=wrapped,
                     api_stems={module: tuple(items) for module, items in stems.items()})


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
    return build_catalogue(_read_all(catalogue_dir()))


@cache
def load_table(stem: str) -> dict[str, Any]:
    """One catalogue file (`scoring`, `verdicts`, `contexts`): what a run served from the cache
    needs for its score, verdicts and cache keys, without parsing the whole catalogue."""
    if load_catalogue.cache_info().currsize:
        return load_catalogue().table(stem)
    path = catalogue_dir() / f"{stem}.toml"
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
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
