"""The target registry: one declaration per hardware target, read from rules/targets.toml (README,
"Adding a target"). Every target list, column, help text and per-target table comes from here, and
the analysis asks for roles (`with_role("host")`), never for a target by name.

    from auditor import targets
    targets.names()                     # ("rocm", "tpu", ..., "cpu"), in report order
    targets.get("xpu").display          # "XPU"
    targets.with_role("host")           # ("cpu",)
    targets.expand(["nvidia", "accepts-cuda-calls"])  # {"nvidia", "rocm"}: platforms and roles
    targets.overall_set()               # OverallSet("core", 1, (...)): what `overall` averages
    targets.resolve({"others": "raises", "host": "works"})  # {"rocm": "raises", ..., "cpu": "works"}

Loading is cheap (one small TOML file, parsed once per process) and happens on first use, never at
import: `audit --version` and a warm run's start-up do not pay for it until a report needs it."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

FILE = "targets.toml"
ROLES: dict[str, str] = {
    "accepts-cuda-calls": "\"cuda\" device strings, .cuda() and most of torch.cuda run there",
    "host": "the CPU every machine has: needs no GPU work, the fallback of dispatch layers",
    "gpu": "a GPU: a user flag named for GPUs may be set there",
    "torch-accelerator": "torch.accelerator reports it",
    "chosen-by-torch-accelerator": "the CUDA-clean gate protects it: CUDA checks turned into accelerator checks run "
                                   "the CUDA branch there",
    "native-privateuse1": "an out-of-tree PrivateUse1 backend of PyTorch",
}
SOURCE_PLATFORM = "nvidia"  # what the code is locked into: a platform of the guards, never a target
OTHERS = "others"  # in an effects row: every target no name or role of the row matched
EFFECTS = ("works", "degrades", "raises")
_NAME = re.compile(r"[a-z][a-z0-9]*\Z")
_STRINGS = ("words", "available", "helpers", "attributes", "requires", "siblings", "visibility", "backend_modules",
            "docs")
_TEXTS = ("called", "vendor", "device", "image", "image_pattern", "dockerfile", "backend", "monitoring",
          "wheel_index", "install", "kernels", "container", "label", "build")
_PATTERNS = ("image_pattern", "dockerfile")
# What the generated parity test and benchmark put into code (auditor/plan/devices.py): checked here so
# that a bad registry value stops the run with the block's name, not a generated file.
_DEVICE = re.compile(r"[a-z][a-z0-9_]*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
BUILDS = ("cuda", "hip", "xpu")  # the attributes of torch.version that name a build
_KEYS = frozenset({"name", "display", "roles", *_STRINGS, *_TEXTS})


class CatalogueError(ValueError):
    """The catalogue (rules/*.toml) is broken: the run stops with this one line (exit 2), which names
    the file and the row."""


class RegistryError(CatalogueError):
    """rules/targets.toml is malformed; the message names the block and the key."""


class Target:
    """One [[target]] block, read-only. A plain class with slots: a NamedTuple or dataclass of 21 fields
    costs every start-up (the configuration imports this module) more than the rest of it.

    Lists of strings (tuples): words, available, helpers, attributes, requires, siblings, visibility,
    backend_modules, docs. Texts ("" when absent): called, vendor, device, image, image_pattern,
    dockerfile, backend, monitoring, wheel_index, install, kernels (how a CUDA kernel is ported there),
    container (how a container or a pod asks for the device), label (how the generated files name it),
    build (the torch.version attribute of its build). See rules/targets.toml for what each means."""

    __slots__ = ("name", "display", "roles", *_STRINGS, *_TEXTS)

    def __init__(self, name: str, display: str, roles: frozenset[str] | set[str] | tuple[str, ...], **fields: Any) -> None:
        unknown = set(fields) - set(_STRINGS) - set(_TEXTS)
        if unknown:
            raise TypeError(f"unknown target fields: {', '.join(sorted(unknown))}")
        self.name, self.display, self.roles = name, display, frozenset(roles)
        for key in _STRINGS:
            setattr(self, key, tuple(fields.get(key, ())))
        for key in _TEXTS:
            setattr(self, key, fields.get(key, ""))

    def __repr__(self) -> str:
        return f"Target({self.name!r}, {self.display!r}, roles={sorted(self.roles)})"

    def has(self, role: str) -> bool:
        return role in self.roles

    @property
    def phrase(self) -> str:
        """How a sentence names it ("the CPU"): `called`, else the display name."""
        return self.called or self.display


class OverallSet:
    """The targets `overall` averages: named and versioned, so a new target moves no gate."""

    __slots__ = ("name", "version", "members")

    def __init__(self, name: str, version: int | None, members: tuple[str, ...]) -> None:
        self.name, self.version, self.members = name, version, tuple(members)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OverallSet) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "members": list(self.members)}


class Registry:
    """Every target, in report order, and the set `overall` averages."""

    __slots__ = ("targets", "overall", "names", "_by_name")

    def __init__(self, targets: tuple[Target, ...], overall: OverallSet) -> None:
        self.targets = targets
        self.overall = overall
        self.names: tuple[str, ...] = tuple(t.name for t in targets)
        self._by_name = {t.name: t for t in targets}

    def get(self, name: str) -> Target | None:
        return self._by_name.get(name)

    def with_role(self, role: str) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets if role in t.roles)


def catalogue_dir() -> Path:
    """Where the TOML files are: inside the installed package, else in the source checkout."""
    installed = Path(__file__).resolve().parent / "rules"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "rules"


_LOADED: list = []  # [(Registry, its parsed data)] once loaded: one registry per process


def registry() -> Registry:
    """The registry, parsed from rules/targets.toml on first use (or primed from a warm run's cache)."""
    if not _LOADED:
        data = _read()
        _LOADED.append((build_registry(data), data))
    return _LOADED[0][0]


def _read() -> dict[str, Any]:
    return read_catalogue_file(FILE, RegistryError, "the target registry must exist")


def read_catalogue_file(relative: str, error: type[CatalogueError], needed: str,
                        folder: Path | None = None) -> dict[str, Any]:
    """rules/<relative> (in `folder`, default the catalogue's) parsed; a missing file or invalid
    TOML is `error` naming it (exit 2)."""
    import tomllib  # not at import: `audit --version` reads no TOML

    path = (catalogue_dir() if folder is None else folder) / relative
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise error(f"rules/{relative} is missing: {needed}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"rules/{relative}: {exc}") from None


def parsed() -> dict[str, Any]:
    """The registry's data as read (plain lists and strings), for a cache to keep beside its results."""
    registry()
    return _LOADED[0][1]


def prime(data: Any) -> None:
    """Use `data` (what `parsed()` gave a run with the same catalogue, kept in its cache's meta, whose
    key covers this file) instead of parsing the file: a warm run then reads no TOML for targets.
    Anything malformed is ignored and the file is read as usual."""
    if _LOADED or not isinstance(data, dict):
        return
    try:
        _LOADED.append((build_registry(data), data))
    except (RegistryError, TypeError, AttributeError, KeyError):
        pass


def build_registry(data: dict[str, Any]) -> Registry:
    """The registry of a parsed targets.toml, checked: unknown keys and roles, duplicate names,
    bad patterns and an `overall` set naming unknown targets all raise RegistryError."""
    blocks = data.get("target")
    if not isinstance(blocks, list) or not blocks:
        raise RegistryError(f"rules/{FILE}: no [[target]] block")
    found: list[Target] = []
    for index, block in enumerate(blocks, start=1):
        found.append(_target(block, index))
    names = [t.name for t in found]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise RegistryError(f"rules/{FILE}: target {duplicate!r} is declared twice")
    clash = next((n for n in names if n in ROLES or n == SOURCE_PLATFORM or n == OTHERS), None)
    if clash is not None:
        raise RegistryError(f"rules/{FILE}: target name {clash!r} is a reserved word (a role, {SOURCE_PLATFORM!r} "
                            f"or {OTHERS!r})")
    return Registry(tuple(found), _overall(data.get("overall"), names))


def _target(block: Any, index: int) -> Target:
    where = f"rules/{FILE} [[target]] #{index}"
    if not isinstance(block, dict):
        raise RegistryError(f"{where}: not a table")
    name = block.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistryError(f"{where}: `name` must be a lower-case word (got {name!r})")
    where = f"rules/{FILE} target {name!r}"
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise RegistryError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(_KEYS))}")
    display = block.get("display")
    if not isinstance(display, str) or not display:
        raise RegistryError(f"{where}: `display` (how messages name it) is required")
    roles = block.get("roles")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise RegistryError(f"{where}: `roles` must be a list of role names ({', '.join(ROLES)})")
    bad = next((r for r in roles if r not in ROLES), None)
    if bad is not None:
        raise RegistryError(f"{where}: unknown role {bad!r}; roles: {', '.join(ROLES)}")
    fields: dict[str, Any] = {}
    for key in _STRINGS:
        value = block.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise RegistryError(f"{where}: `{key}` must be a list of strings")
        fields[key] = tuple(value)
    for key in _TEXTS:
        value = block.get(key, "")
        if not isinstance(value, str):
            raise RegistryError(f"{where}: `{key}` must be a string")
        fields[key] = value
    _check_generated(fields, where)
    return Target(name=name, display=display, roles=frozenset(roles), **fields)


def _check_generated(fields: dict[str, Any], where: str) -> None:
    """The values the generated parity test and benchmark write into code: a device type, dotted
    module names and a torch.version attribute."""
    if fields["device"] and not _DEVICE.match(fields["device"]):
        raise RegistryError(f"{where}: `device` must be a torch device type such as 'tpu' (got {fields['device']!r})")
    bad = next((m for m in fields["backend_modules"] if not _MODULE.match(m)), None)
    if bad is not None:
        raise RegistryError(f"{where}: `backend_modules` {bad!r} is not a dotted module name")
    if fields["build"] and fields["build"] not in BUILDS:
        raise RegistryError(f"{where}: `build` must be one of {', '.join(BUILDS)} (got {fields['build']!r})")


def pattern_errors(target: Target, keys: tuple[str, ...] = ("helpers", "requires", *_PATTERNS)) -> list[str]:
    """The target's regular expressions (of `keys`) that do not compile, as "`key` 'pattern' (why)".
    Not checked at load: compiling them costs a warm run more than the rest of the registry."""
    found = []
    for key in keys:
        value = getattr(target, key)
        for pattern in (value if isinstance(value, tuple) else (value,) if value else ()):
            try:
                re.compile(pattern)
            except re.error as exc:
                found.append(f"`{key}` {pattern!r} is not a regular expression ({exc})")
    return found


def _overall(table: Any, names: list[str]) -> OverallSet:
    where = f"rules/{FILE} [overall]"
    if not isinstance(table, dict):
        raise RegistryError(f"{where} is required: the named, versioned set `overall` averages")
    name, version, members = table.get("name"), table.get("version"), table.get("members")
    if not isinstance(name, str) or not name or not isinstance(version, int) or isinstance(version, bool):
        raise RegistryError(f"{where}: needs a `name` and an integer `version`")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise RegistryError(f"{where}: `members` must be a non-empty list of target names")
    unknown = next((m for m in members if m not in names), None)
    if unknown is not None:
        raise RegistryError(f"{where}: member {unknown!r} is not a declared target")
    return OverallSet(name, version, tuple(members))


# -- the questions the rest of the code asks -----------------------------------------------------
def names() -> tuple[str, ...]:
    """Every target, in report order."""
    return registry().names


def get(name: str) -> Target:
    found = registry().get(name)
    if found is None:
        raise KeyError(name)
    return found


def with_role(role: str) -> tuple[str, ...]:
    """The targets that have `role`, in report order."""
    if role not in ROLES:
        raise KeyError(role)
    return registry().with_role(role)


def has_role(name: str, role: str) -> bool:
    found = registry().get(name)
    return found is not None and role in found.roles


def overall_set(members: tuple[str, ...] | list[str] | None = None) -> OverallSet:
    """The set `overall` averages: the catalogue's named one, or a project's own members."""
    if members:
        return OverallSet("configured", None, tuple(members))
    return registry().overall


def gate_names() -> tuple[str, ...]:
    """What `targets`, `fail-under` and --target accept: "overall" and every target."""
    return ("overall", *names())


def displays(chosen: list[str] | tuple[str, ...]) -> str:
    """"TPU, Trainium and MPS": the display names of `chosen`, in report order."""
    wanted = set(chosen)
    return join([t.display for t in registry().targets if t.name in wanted])


def join(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def expand(items: list[str] | tuple[str, ...]) -> frozenset[str]:
    """Platforms from a catalogue list that may name the source platform (nvidia), targets and
    roles: ["nvidia", "accepts-cuda-calls"] -> {"nvidia", "rocm"}. Unknown words raise KeyError."""
    reg = registry()
    found: set[str] = set()
    for item in items:
        if item == SOURCE_PLATFORM or reg.get(item) is not None:
            found.add(item)
        elif item in ROLES:
            found.update(reg.with_role(item))
        else:
            raise KeyError(item)
    return frozenset(found)


def selector_kind(key: str) -> str | None:
    """What an effects-row key is: "target", "role", "others", or None (unknown)."""
    if registry().get(key) is not None:
        return "target"
    if key in ROLES:
        return "role"
    return "others" if key == OTHERS else None


def resolve(rows: list[dict[str, str]] | tuple[dict[str, str], ...] | dict[str, str]) -> dict[str, str]:
    """The effect per target from sparse rows, most specific first: `rows` is a rule's row, or
    (row, family default); a key is a target name, a role or "others". A target's own name wins,
    then its roles, then "others"; at the same level the first row wins. A target nothing covers
    is left out (the caller reports it)."""
    if isinstance(rows, dict):
        if not rows:
            return {}  # most catalogue rows have no effects of their own
        rows = (rows,)
    result: dict[str, str] = {}
    for target in registry().targets:
        value = _pick(target, rows)
        if value is not None:
            result[target.name] = value
    return result


def _pick(target: Target, rows: tuple[dict[str, str], ...] | list[dict[str, str]]) -> str | None:
    for row in rows:
        if target.name in row:
            return row[target.name]
    for row in rows:
        values = {row[role] for role in target.roles if role in row}
        if values:
            return values.pop() if len(values) == 1 else None  # ambiguous: the checker names it
    for row in rows:
        if OTHERS in row:
            return row[OTHERS]
    return None


def ambiguous(target: Target, row: dict[str, str]) -> list[str]:
    """The roles of `target` a row gives different effects (which one wins is undefined)."""
    hits = sorted(role for role in target.roles if role in row)
    return hits if target.name not in row and len({row[r] for r in hits}) > 1 else []


# Per-target facts for templates, "ROCm: `HIP_VISIBLE_DEVICES`; XPU: ..." (targets without one left out).
FACT_FIELDS = ("visibility_variables", "distributed_backends", "monitoring_tools", "wheel_indexes", "kernel_ports",
               "container_requests")


@lru_cache(maxsize=1)
def fact_fields() -> dict[str, str]:
    """The registry's per-target facts as template fields, so a suggestion that lists what each
    target uses instead is written from the registry, never by hand."""
    every = registry().targets

    def listing(value) -> str:
        return "; ".join(f"{t.display}: {value(t)}" for t in every if value(t))

    return {
        "visibility_variables": listing(lambda t: " / ".join(f"`{v}`" for v in t.visibility)),
        "distributed_backends": listing(lambda t: t.backend),
        "monitoring_tools": listing(lambda t: f"`{t.monitoring}`" if t.monitoring else ""),
        "wheel_indexes": listing(lambda t: f"{t.wheel_index}{t.install}" if t.wheel_index else t.install),
        "kernel_ports": listing(lambda t: t.kernels),
        "container_requests": listing(lambda t: t.container),
    }


def effect_fields(effects: dict[str, str]) -> dict[str, str]:
    """`raising_targets`, `degrading_targets` and `working_targets` for a finding's templates: the
    display names of the targets with each effect, in report order ("TPU, Trainium and MPS"), and
    `nvidia_and_working_targets` ("NVIDIA, ROCm and XPU")."""
    return _effect_fields(tuple(effects.items()))


@lru_cache(maxsize=256)
def _effect_fields(effects: tuple[tuple[str, str], ...]) -> dict[str, str]:
    classes: dict[str, list[str]] = {"raises": [], "degrades": [], "works": []}
    for target, effect in effects:
        classes[effect].append(target)
    return {"raising_targets": displays(classes["raises"]) or "no target",
            "degrading_targets": displays(classes["degrades"]) or "no target",
            "working_targets": displays(classes["works"]) or "no target",
            # "NVIDIA, ROCm and XPU": where the code runs as it is, NVIDIA (the source platform) first
            "nvidia_and_working_targets": join(["NVIDIA", *(get(t).display for t in classes["works"])])}
