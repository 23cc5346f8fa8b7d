"""Settings: one frozen object built from the configuration file and the command line, carried
through discovery, the cache key, the suppressions, the gates and the reports.

Where the configuration comes from (as ruff and mypy find theirs): `--config FILE`, else the
first of `lockin-auditor.toml`, `.lockin-auditor.toml` and a `pyproject.toml` holding a
`[tool.lockin-auditor]` table, looking in the scanned folder and then each folder above it, up to
the repository root (the folder holding `.git`). `--isolated` reads none. Command-line flags
override the file, key by key.

A scanned repository is untrusted (CI runs `audit` on pull requests from forks), so its
configuration is only parsed, never executed: no key runs a command or names a module to
import, a configuration file that is a link out of the repository is refused, and the one key
that names a file to read (`baseline`) must stay inside the repository. An unknown key, rule,
severity or target is an error that names the nearest valid spelling."""

# No `from __future__ import annotations`: with string annotations, @dataclass parses each of
# Settings' fields for ClassVar on every start-up (~5 ms of a pre-commit run).
import math
import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

from auditor.model import SEVERITIES, TARGETS

TABLE = "lockin-auditor"
CONFIG_NAMES = ("lockin-auditor.toml", ".lockin-auditor.toml", "pyproject.toml")
MAX_CONFIG_BYTES = 1024 * 1024
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
GATE_TARGETS = ("overall", *TARGETS)
# The rules an in-house catalogue entry may name (the dependency and kernel-library rules).
PACKAGE_RULE = "nvidia-only-runtime-package"
MODULE_RULE = "gpu-kernel-library"
_VERSION = re.compile(r"^\d{1,9}(\.\d{1,9}){0,2}$")


class ConfigError(Exception):
    """A configuration or option the run cannot honour: exit 2 with this one line."""


def nearest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """" (did you mean 'x'?)" for the closest valid spelling, or "" when nothing is close. Ties
    go to the spelling with the fewest differing characters in place (LK1O1 -> LK101, not LK411)."""
    import difflib  # only on the way to an error message

    wanted = word.lower()
    best, best_key = None, (0.6, 0)
    for choice in choices:
        candidate = choice.lower()
        ratio = difflib.SequenceMatcher(None, wanted, candidate).ratio()
        same_place = sum(a == b for a, b in zip(wanted, candidate, strict=False))
        if (ratio, same_place) >= best_key:
            best, best_key = choice, (ratio, same_place)
    return f" (did you mean {best!r}?)" if best is not None else ""


@dataclass(frozen=True)
class PackageEntry:
    """An in-house requirement the catalogue does not know: `name` is reported by `rule`."""

    name: str
    rule: str = PACKAGE_RULE
    what: str = "declared GPU-only in the project's lockin-auditor configuration"
    action: str = "keep it behind an optional extra with a portable fallback"


@dataclass(frozen=True)
class ModuleEntry:
    """An in-house Python module (and everything below it) that only runs on NVIDIA GPUs."""

    name: str
    rule: str = MODULE_RULE
    replacement: str = "a portable code path, keeping this module an optional fast path for NVIDIA GPUs"


@dataclass(frozen=True)
class Settings:
    """Everything a run was asked to do. Frozen: build a new one with `dataclasses.replace`."""

    # -- which rules, and how their findings count -----------------------------------------------
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    # (glob, rule selectors): a glob without a slash matches a file name, one with a slash an
    # absolute path (config globs are anchored at the configuration's folder, CLI ones at the cwd).
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: tuple[tuple[str, str], ...] = ()  # (rule code or name, severity)
    # -- which files ----------------------------------------------------------------------------
    excludes: tuple[str, ...] = ()  # same glob forms as per_file_ignores
    force_exclude: bool = False  # apply the excludes (and .gitignore) to files named explicitly
    respect_gitignore: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    # -- the catalogue, extended by the project --------------------------------------------------
    packages: tuple[PackageEntry, ...] = ()
    modules: tuple[ModuleEntry, ...] = ()
    portable_modules: tuple[str, ...] = ()  # wrapper modules known to be portable: nothing through them counts
    torch_version: str | None = None  # the PyTorch version the project runs on (fixes read it)
    # -- gates ------------------------------------------------------------------------------------
    targets: tuple[str, ...] = ("overall",)
    fail_under: tuple[tuple[str, float], ...] = ()  # (target, threshold)
    fail_on: str | None = None
    fail_on_regression: bool = False
    exit_zero: bool = False
    baseline: str | None = None  # absolute path
    diff_base: str | None = None  # a git ref: only findings on lines changed since it count
    # -- output -----------------------------------------------------------------------------------
    output_format: str | None = None  # None: text, or concise under pre-commit / CI (see cli)
    show_suppressed: bool = False
    statistics: bool = False
    quiet: bool = False
    # -- running ----------------------------------------------------------------------------------
    jobs: int | None = None
    cache: bool = True
    cache_dir: str | None = None
    cache_check: str = "stat"  # stat: size + mtime say a file is unchanged; content: its hash does
    progress: bool = False
    config_path: str | None = None  # the file these came from, for messages
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # key -> where it was set

    def __post_init__(self) -> None:
        # Callers (tests, the bench) pass lists; keep the object hashable and immutable.
        for name in ("select", "ignore"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        for name in ("extend_select", "excludes", "targets", "portable_modules", "packages", "modules"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    # -- derived ------------------------------------------------------------------------------------
    @property
    def effective_select(self) -> list[str] | None:
        """--select plus --extend-select (None: every rule)."""
        if self.select is None:
            return None
        return [*self.select, *self.extend_select]

    @property
    def effective_ignore(self) -> list[str] | None:
        return list(self.ignore) if self.ignore else None

    def origin(self, key: str) -> str:
        """Where a setting came from, for error messages: "--select" or "pyproject.toml"."""
        return dict(self.origins).get(key, f"--{key}")

    def catalogue_material(self) -> dict:
        """What the project adds to the catalogue, for the cache key and the workers."""
        return {"packages": [[p.name, p.rule, p.what, p.action] for p in self.packages],
                "modules": [[m.name, m.rule, m.replacement] for m in self.modules],
                "portable": list(self.portable_modules)}

    def cache_extra(self) -> dict | None:
        """What the cached per-file results depend on beyond the rule selection and the size limit
        (per-file-ignores, severities and gates are applied after the cache); None when nothing."""
        material = self.catalogue_material()
        return {"catalogue": material} if any(material.values()) else None


# -- finding and reading the file ---------------------------------------------------------------------

def find_config(start: str) -> str | None:
    """The configuration file for a scan of `start`: the nearest folder at or above it holding one,
    not going above the repository root."""
    here = os.path.abspath(start)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate) and (name != "pyproject.toml" or _has_table(candidate)):
                return candidate
        if os.path.lexists(os.path.join(here, ".git")):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _has_table(pyproject: str) -> bool:
    """Whether a pyproject.toml configures us: a byte test first (most do not mention us), then the parse."""
    try:
        with open(pyproject, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return False
    if TABLE.encode() not in data:
        return False
    try:
        table = _parse(data, pyproject).get("tool", {})
    except ConfigError:
        return True  # ours, but broken: reading it will say what is wrong
    return isinstance(table, dict) and TABLE in table


def _parse(data: bytes, path: str) -> dict:
    import tomllib

    from auditor import toml_guard

    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} kB; not a configuration file")
    try:
        return toml_guard.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it or run with --isolated") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise ConfigError(f"{path}: not valid TOML (nested too deeply); fix it or run with --isolated") from None


def _repository_root(directory: str) -> str:
    """The repository `directory` is in (discover's definition, as git's), or `directory` itself."""
    from auditor.discover import repository_root  # only when a link or a baseline needs it

    return repository_root(directory) or directory


def read_config(path: str, explicit: bool = False) -> dict:
    """The `[tool.lockin-auditor]` table (pyproject) or the whole file (lockin-auditor.toml).

    A discovered file that is a link out of its repository is refused: reading it would read
    outside the scanned tree."""
    folder = os.path.dirname(os.path.abspath(path))
    if not explicit and os.path.islink(path):
        root = os.path.realpath(_repository_root(folder))
        real = os.path.realpath(path)
        if not real.startswith(root + os.sep):
            raise ConfigError(f"{path} is a link out of the repository; not read (pass --config or --isolated)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.strerror or exc}") from None
    parsed = _parse(data, path)
    if os.path.basename(path) == "pyproject.toml":
        tool = parsed.get("tool", {})
        table = tool.get(TABLE) if isinstance(tool, dict) else None
        if table is None:
            if explicit:
                raise ConfigError(f"{path} has no [tool.{TABLE}] table")
            return {}
        parsed = table
    if not isinstance(parsed, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    return parsed


# -- turning the table into settings --------------------------------------------------------------------

KEYS = ("select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude", "force-exclude",
        "respect-gitignore", "targets", "fail-under", "fail-on", "fail-on-regression", "torch-version", "severity",
        "catalogue", "baseline", "output-format", "show-suppressed")
CATALOGUE_KEYS = ("gpu-only-packages", "gpu-only-modules", "portable-modules")


# A repository's configuration is untrusted: lists this long (40,000 excludes or in-house
# packages took minutes; issue 20, D13 and D18) are no configuration anyone writes.
MAX_LIST_ENTRIES = 1000
MAX_ENTRY_CHARS = 1000


def _bounded(values: list, key: str, reader: "_Reader") -> None:
    if len(values) > MAX_LIST_ENTRIES:
        raise reader.fail(key, f"has {len(values):,} entries; at most {MAX_LIST_ENTRIES:,} are read")
    long = next((v for v in values if isinstance(v, str) and len(v) > MAX_ENTRY_CHARS), None)
    if long is not None:
        raise reader.fail(key, f"has an entry of {len(long):,} characters; at most {MAX_ENTRY_CHARS:,}")


class _Reader:
    """Typed access to one table, with errors that name the file and the key."""

    def __init__(self, table: dict, where: str) -> None:
        self.table = table
        self.where = where

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: {key!r} {message}")

    def strings(self, key: str) -> tuple[str, ...] | None:
        value = self.table.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "must be a list of strings")
        _bounded(value, key, self)
        return tuple(value)

    def boolean(self, key: str) -> bool | None:
        value = self.table.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def text(self, key: str) -> str | None:
        value = self.table.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, "must be a string")
        return value


def _threshold(value: Any, key: str, reader: _Reader) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 100:
        raise reader.fail(key, "must be a number from 0 to 100")
    return float(value)


def _target(name: str, key: str, reader: _Reader) -> str:
    lowered = name.lower()
    if lowered not in GATE_TARGETS:
        raise reader.fail(key, f"names unknown target {name!r}{nearest(name, GATE_TARGETS)}; "
                               f"choose from {', '.join(GATE_TARGETS)}")
    return lowered


def severity_name(value: str, where: str) -> str:
    lowered = value.lower()
    if lowered not in SEVERITIES:
        raise ConfigError(f"{where}: unknown severity {value!r}{nearest(value, SEVERITIES)}; "
                          f"choose from {', '.join(SEVERITIES)}")
    return lowered


def anchor(pattern: str, base: str) -> str:
    """A glob with a slash is a path relative to `base`: make it absolute; a bare name stays."""
    stripped = pattern.strip()
    if "/" not in stripped.strip("/"):
        return stripped.strip("/")
    if stripped.startswith("./"):
        stripped = stripped[2:]
    return stripped if os.path.isabs(stripped) else os.path.join(base, stripped.strip("/"))


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    root = os.path.realpath(root)
    return real == root or real.startswith(root + os.sep)


def settings_from_table(table: dict, path: str, explicit: bool = False) -> dict[str, Any]:
    """The Settings fields a configuration table sets (only those it sets)."""
    where = os.path.relpath(path) if not os.path.isabs(path) or path.startswith(os.getcwd()) else path
    if os.path.basename(path) == "pyproject.toml":
        where += f" [tool.{TABLE}]"
    reader = _Reader(table, where)
    unknown = [key for key in table if key not in KEYS]
    if unknown:
        key = unknown[0]
        raise ConfigError(f"{where}: unknown key {key!r}{nearest(key, KEYS)}; valid keys: {', '.join(KEYS)}")
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, Any] = {}
    origins: dict[str, str] = {}

    def put(name: str, value: Any, key: str) -> None:
        if value is not None:
            out[name] = value
            origins[key] = where

    put("select", reader.strings("select"), "select")
    put("extend_select", reader.strings("extend-select"), "extend-select")
    put("ignore", reader.strings("ignore"), "ignore")
    excludes = [*(reader.strings("exclude") or ()), *(reader.strings("extend-exclude") or ())]
    if excludes:
        put("excludes", tuple(anchor(p, base) for p in excludes), "exclude")
    put("force_exclude", reader.boolean("force-exclude"), "force-exclude")
    put("respect_gitignore", reader.boolean("respect-gitignore"), "respect-gitignore")
    put("fail_on_regression", reader.boolean("fail-on-regression"), "fail-on-regression")
    put("show_suppressed", reader.boolean("show-suppressed"), "show-suppressed")
    output_format = reader.text("output-format")
    if output_format is not None:
        from auditor.report import REPORTERS

        if output_format not in REPORTERS:
            raise reader.fail("output-format", f"names unknown format {output_format!r}"
                                               f"{nearest(output_format, list(REPORTERS))}; choose from {', '.join(REPORTERS)}")
        put("output_format", output_format, "output-format")

    pfi = table.get("per-file-ignores")
    if pfi is not None:
        if not isinstance(pfi, dict):
            raise reader.fail("per-file-ignores", 'must be a table of glob = ["CODE", ...]')
        _bounded(list(pfi), "per-file-ignores", reader)
        entries = []
        for glob, codes in pfi.items():
            sub = _Reader({glob: codes}, f"{where} per-file-ignores")
            entries.append((anchor(glob, base), sub.strings(glob) or ()))
        put("per_file_ignores", tuple(entries), "per-file-ignores")

    severity = table.get("severity")
    if severity is not None:
        if not isinstance(severity, dict) or not all(isinstance(v, str) for v in severity.values()):
            raise reader.fail("severity", 'must be a table of CODE = "blocker" | "major" | "minor" | "info"')
        put("severity", tuple((code, severity_name(level, f"{where} severity.{code}"))
                              for code, level in severity.items()), "severity")

    fail_on = reader.text("fail-on")
    if fail_on is not None:
        put("fail_on", severity_name(fail_on, f"{where} fail-on"), "fail-on")

    targets = reader.strings("targets")
    if targets is not None:
        put("targets", tuple(_target(t, "targets", reader) for t in targets), "targets")
    fail_under = table.get("fail-under")
    if fail_under is not None:
        if isinstance(fail_under, dict):
            pairs = tuple((_target(t, "fail-under", reader), _threshold(v, "fail-under", reader))
                          for t, v in fail_under.items())
        else:
            threshold = _threshold(fail_under, "fail-under", reader)
            pairs = tuple((t, threshold) for t in out.get("targets", ("overall",)))
            out["fail_under_number"] = threshold
        put("fail_under", pairs, "fail-under")

    version = reader.text("torch-version")
    if version is not None:
        if not _VERSION.match(version.strip()):
            raise reader.fail("torch-version", f"must be a version like \"2.4\", not {version!r}")
        put("torch_version", version.strip(), "torch-version")

    baseline = reader.text("baseline")
    if baseline is not None:
        resolved = os.path.normpath(os.path.join(base, baseline))
        if not explicit and not _inside(resolved, _repository_root(base)):
            raise reader.fail("baseline", f"{baseline!r} is outside the repository; not read")
        put("baseline", resolved, "baseline")

    catalogue = table.get("catalogue")
    if catalogue is not None:
        out.update(_catalogue(catalogue, _Reader(catalogue, f"{where} catalogue") if isinstance(catalogue, dict)
                              else reader))
        origins["catalogue"] = where
    out["origins"] = tuple(origins.items())
    return out


def _catalogue(table: Any, reader: _Reader) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise reader.fail("catalogue", "must be a table")
    unknown = [key for key in table if key not in CATALOGUE_KEYS]
    if unknown:
        raise reader.fail(unknown[0], f"is not a catalogue key{nearest(unknown[0], CATALOGUE_KEYS)}; "
                                      f"valid: {', '.join(CATALOGUE_KEYS)}")
    out: dict[str, Any] = {}
    packages = _entries(table.get("gpu-only-packages"), "gpu-only-packages", reader, PackageEntry)
    modules = _entries(table.get("gpu-only-modules"), "gpu-only-modules", reader, ModuleEntry)
    if packages:
        out["packages"] = packages
    if modules:
        out["modules"] = modules
    portable = reader.strings("portable-modules")
    if portable:
        out["portable_modules"] = tuple(p.strip() for p in portable)
    return out


def _entries(value: Any, key: str, reader: _Reader, kind: type) -> tuple:
    """A list of names, or of tables {name = ..., rule = ..., ...} with the entry's fields."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise reader.fail(key, "must be a list of names or tables")
    _bounded(value, key, reader)
    allowed = [f.name for f in fields(kind)]
    entries = []
    for item in value:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise reader.fail(key, "entries need a `name`")
        for name, field_value in item.items():
            if name not in allowed:
                raise reader.fail(key, f"entry key {name!r} is unknown{nearest(name, allowed)}; valid: {', '.join(allowed)}")
            if not isinstance(field_value, str):
                raise reader.fail(key, f"entry key {name!r} must be a string")
        entries.append(kind(**{k: v.strip() for k, v in item.items()}))
    return tuple(entries)


# -- putting it together ------------------------------------------------------------------------------

def load_settings(scan_root: str, overrides: dict[str, Any], config: str | None = None,
                  isolated: bool = False) -> Settings:
    """The run's settings: the configuration found from `scan_root` (or `config`), with every
    key present in `overrides` (the command line) taking precedence."""
    values: dict[str, Any] = {}
    path = None
    if not isolated:
        if config is not None:
            if not os.path.isfile(config):
                raise ConfigError(f"--config {config}: no such file (give a lockin-auditor.toml or pyproject.toml)")
            path = config
        else:
            path = find_config(scan_root)
        if path is not None:
            values = settings_from_table(read_config(path, explicit=config is not None), path,
                                         explicit=config is not None)
            values["config_path"] = os.path.abspath(path)
    origins = dict(values.pop("origins", ()))
    config_number = values.pop("fail_under_number", None)
    overrides = dict(overrides)
    cli_number = overrides.pop("fail_under_number", None)
    targets = overrides.get("targets") or values.get("targets") or ("overall",)
    # --fail-under N gates the targets named by --target, else by the configuration; --target alone
    # re-aims the configuration's single threshold.
    if cli_number is not None:
        overrides["fail_under"] = tuple((t, cli_number) for t in targets)
    elif "targets" in overrides and config_number is not None:
        overrides["fail_under"] = tuple((t, config_number) for t in targets)
    for key, value in overrides.items():
        values[key] = value
        origins.pop(key.replace("_", "-"), None)
    values["origins"] = tuple(origins.items())
    return Settings(**values)


def with_overrides(settings: Settings, **changes: Any) -> Settings:
    return replace(settings, **changes)
