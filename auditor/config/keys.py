"""Every key a run can be given, in one table (`KEYS`): the configuration file's keys and the
options of `audit scan`, in the order `audit scan --help` lists them.

A row says what the key sets (a Settings field, with its type and default; or a one-off request of
this invocation, auditor.run.Request; or how the configuration is found), where it can be set (its
configuration-file key, its command-line option with its type, default, help and panel) and how a
value is read and checked in each place. `Settings` (auditor.config.settings) takes its fields from
it, the configuration file is read by it (auditor.config.load) and the command line is built from it
(auditor.cli): a new key is one row.

The command line imports this module at start-up (`audit --version` too), so it stays light: no
module of the scan is imported here."""

import math
import os
import re
from collections.abc import Callable
from dataclasses import fields, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor import targets as registry
from auditor.config import ConfigError, nearest
from auditor.config.files import repository_folder
from auditor.model import SEVERITIES
from auditor.paths import inside
from auditor.report import REPORTERS

if TYPE_CHECKING:  # the entries' module loads only for a [catalogue] table (see _catalogue)
    from auditor.config.entries import InHouseModule, InHousePackage

DEFAULT_MAX_BYTES = 10 * 1024 * 1024  # files larger than this are not read (--max-file-size)
MAX_FILE_SIZE_MB = 10_000
# The --target help names the targets of the registry (rules/targets.toml), but only when help is
# shown: reading the registry at import would slow every start-up (see Key.shown_help).
TARGET_HELP = ("Score(s) the --fail-under gate checks: overall (default), {choices}; a target also narrows "
               "the report to it (its verdict, score and the findings that matter there).")
CATALOGUE_KEYS = ("gpu-only-packages", "gpu-only-modules", "portable-modules")
_VERSION = re.compile(r"\d{1,9}(\.\d{1,9}){0,2}")  # bounded: int() refuses 4,300 digits (issue 20, D22)
# A repository's configuration is untrusted: lists this long (40,000 excludes or in-house
# packages took minutes; issue 20, D13 and D18) are no configuration anyone writes.
MAX_LIST_ENTRIES = 1000
MAX_ENTRY_CHARS = 1000

# Help panels: options grouped the way ruff groups them, so a new option has an obvious home.
RULES, FILES, GATES, BASELINES, FIXES, OUTPUT, CONFIG, RUNNING = (
    "Rule selection", "File selection", "Gates", "Baselines and changed lines", "Fixes", "Output", "Configuration",
    "Running")


class CacheCheck(StrEnum):
    stat = "stat"
    content = "content"


# The report formats come from the reporter registry (auditor/report/__init__.py).
OutputFormat = StrEnum("OutputFormat", {name: name for name in REPORTERS})  # type: ignore[misc]


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class Reader:
    """Typed access to one configuration table, with errors that name the file and the key.
    `base` is the folder of the configuration file (relative globs and paths start there);
    `explicit`: the file was named with --config (a baseline may then lie outside the repository)."""

    def __init__(self, table: dict, where: str, base: str = "", explicit: bool = False) -> None:
        self.table = table
        self.where = where
        self.base = base
        self.explicit = explicit

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
        self.bounded(value, key)
        return tuple(value)

    def bounded(self, values: list, key: str) -> None:
        """At most MAX_LIST_ENTRIES entries of MAX_ENTRY_CHARS characters."""
        if len(values) > MAX_LIST_ENTRIES:
            raise self.fail(key, f"has {len(values):,} entries; at most {MAX_LIST_ENTRIES:,} are read")
        long = next((v for v in values if isinstance(v, str) and len(v) > MAX_ENTRY_CHARS), None)
        if long is not None:
            raise self.fail(key, f"has an entry of {len(long):,} characters; at most {MAX_ENTRY_CHARS:,}")

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


# What a row does with a value: from the file, (reader, key) -> {field: value}, or None when the file
# does not set it; from the command line, (value, cwd) -> the value for the row's destination, or
# None when the option was not given; once the configuration is read, (settings, value, cwd) -> settings.
FileReader = Callable[[Reader, "Key"], "dict[str, Any] | None"]
OptionReader = Callable[[Any, str], Any]
AfterLoad = Callable[[Any, Any, str], Any]


class Key:
    """One row of the table. A plain class rather than a dataclass: the command line builds the
    table at every start-up, and a dataclass of this many fields costs more to create than the rows."""

    __slots__ = ("name", "help", "field", "type", "default", "to", "file", "origin", "flags", "option",
                 "option_default", "panel", "extra", "cli", "after", "shown_help")

    def __init__(self, name: str, help: str = "", *,
                 field: str | None = None, type: Any = None, default: Any = None, to: str = "",
                 file: FileReader | None = None, origin: str = "",
                 flags: tuple[str, ...] = (), option: Any = None, option_default: Any = None, panel: str = "",
                 extra: dict | None = None, cli: OptionReader | None = None, after: AfterLoad | None = None,
                 shown_help: Callable[[], str] | None = None) -> None:
        self.name = name  # the configuration file's key; the option's name (its flags may differ)
        self.help = help  # the option's help; for a file-only key, what it sets
        # -- what it sets: a Settings field this row declares, with its type and default ...
        self.field = field
        self.type = type
        self.default = default
        # ... or where the command-line value goes when that is not the row's field: another Settings
        # field, "request.<name>" (auditor.run.Request) or "config.<name>" (how the configuration is found).
        self.to = to
        # -- the configuration file
        self.file = file  # None: not a key of the file
        self.origin = origin  # the key that `Settings.origin` and messages name ("": this one)
        # -- the command line
        self.flags = flags  # empty: the file only
        self.option = option  # the option's type, as typer reads it
        self.option_default = option_default
        self.panel = panel
        self.extra = extra or {}  # more typer.Option arguments (min, max, show_default)
        self.cli = cli  # None: the option's value as it is
        self.after = after  # applied once the configuration is read
        self.shown_help = shown_help  # the full help, built only when --help is shown (it reads data)

    def __repr__(self) -> str:
        return f"Key({self.name!r})"

    @property
    def param(self) -> str:
        """The option's parameter name in `audit scan`."""
        return self.name.replace("-", "_")

    @property
    def destination(self) -> str:
        return self.to or self.field or ""


# -- values, checked the same way wherever they come from ---------------------------------------------

def split(values: list[str] | None) -> list[str] | None:
    """Repeated options with comma-separated values, as one list (None: none given)."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def anchor(pattern: str, base: str) -> str:
    """A glob with a slash is a path relative to `base`: make it absolute; a bare name stays."""
    stripped = pattern.strip()
    if "/" not in stripped.strip("/"):
        return stripped.strip("/")
    if stripped.startswith("./"):
        stripped = stripped[2:]
    return stripped if os.path.isabs(stripped) else os.path.join(base, stripped.strip("/"))


def severity_name(value: str, where: str) -> str:
    lowered = value.lower()
    if lowered not in SEVERITIES:
        raise ConfigError(f"{where}: unknown severity {value!r}{nearest(value, SEVERITIES)}; "
                          f"choose from {', '.join(SEVERITIES)}")
    return lowered


def valid_version(value: str) -> bool:
    """What a torch version may be written as: 2, 2.4 or 2.4.1."""
    return _VERSION.fullmatch(value.strip()) is not None


def _threshold(value: Any, key: str, reader: Reader) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 100:
        raise reader.fail(key, "must be a number from 0 to 100")
    return float(value)


def _target(name: str, key: str, reader: Reader, choices: tuple[str, ...] | None = None) -> str:
    """A target name (or "overall") from the registry, lower-cased; anything else stops the run."""
    choices = choices or registry.gate_names()
    lowered = name.lower()
    if lowered not in choices:
        raise reader.fail(key, f"names unknown target {name!r}{nearest(name, choices)}; "
                               f"choose from {', '.join(choices)}")
    return lowered


def _target_help() -> str:
    return TARGET_HELP.format(choices=", ".join(registry.names()))


def _inside(path: str, root: str) -> bool:
    return inside(os.path.realpath(path), os.path.realpath(root))


# -- reading the configuration file -------------------------------------------------------------------

def _strings(reader: Reader, key: Key) -> dict[str, Any] | None:
    value = reader.strings(key.name)
    return None if value is None else {key.field: value}


def _boolean(reader: Reader, key: Key) -> dict[str, Any] | None:
    value = reader.boolean(key.name)
    return None if value is None else {key.field: value}


def _excludes(reader: Reader, key: Key) -> dict[str, Any] | None:
    """`exclude` and `extend-exclude` together: in the file both add to what is skipped."""
    excludes = [*(reader.strings("exclude") or ()), *(reader.strings("extend-exclude") or ())]
    return {"excludes": tuple(anchor(p, reader.base) for p in excludes)} if excludes else None


def _read_with_exclude(reader: Reader, key: Key) -> dict[str, Any] | None:
    """`extend-exclude` is read together with `exclude`."""
    return None


def _per_file_ignores(reader: Reader, key: Key) -> dict[str, Any] | None:
    pfi = reader.table.get("per-file-ignores")
    if pfi is None:
        return None
    if not isinstance(pfi, dict):
        raise reader.fail("per-file-ignores", 'must be a table of glob = ["CODE", ...]')
    reader.bounded(list(pfi), "per-file-ignores")
    entries = []
    for glob, codes in pfi.items():
        sub = Reader({glob: codes}, f"{reader.where} per-file-ignores")
        entries.append((anchor(glob, reader.base), sub.strings(glob) or ()))
    return {"per_file_ignores": tuple(entries)}


def _severity(reader: Reader, key: Key) -> dict[str, Any] | None:
    severity = reader.table.get("severity")
    if severity is None:
        return None
    if not isinstance(severity, dict) or not all(isinstance(v, str) for v in severity.values()):
        raise reader.fail("severity", 'must be a table of CODE = "blocker" | "major" | "minor" | "info"')
    return {"severity": tuple((code, severity_name(level, f"{reader.where} severity.{code}"))
                              for code, level in severity.items())}


def _targets(reader: Reader, key: Key) -> dict[str, Any] | None:
    targets = reader.strings("targets")
    return None if targets is None else {"targets": tuple(_target(t, "targets", reader) for t in targets)}


def _overall_targets(reader: Reader, key: Key) -> dict[str, Any] | None:
    """The targets `overall` averages, instead of the catalogue's named set (never "overall" itself)."""
    overall = reader.strings("overall-targets")
    if overall is None:
        return None
    if not overall:
        raise reader.fail("overall-targets", "must name at least one target")
    return {"overall_targets": tuple(_target(t, "overall-targets", reader, registry.names()) for t in overall)}


def _fail_under(reader: Reader, key: Key) -> dict[str, Any] | None:
    """A number gates the file's `targets` (overall by default); a table names a threshold per target."""
    fail_under = reader.table.get("fail-under")
    if fail_under is None:
        return None
    if isinstance(fail_under, dict):
        return {"fail_under": tuple((_target(t, "fail-under", reader), _threshold(v, "fail-under", reader))
                                    for t, v in fail_under.items())}
    threshold = _threshold(fail_under, "fail-under", reader)
    targets = (_targets(reader, key) or {}).get("targets", ("overall",))
    return {"fail_under": tuple((t, threshold) for t in targets), "fail_under_number": threshold}


def _fail_on(reader: Reader, key: Key) -> dict[str, Any] | None:
    fail_on = reader.text("fail-on")
    return None if fail_on is None else {"fail_on": severity_name(fail_on, f"{reader.where} fail-on")}


def _torch_version(reader: Reader, key: Key) -> dict[str, Any] | None:
    version = reader.text("torch-version")
    if version is None:
        return None
    if not valid_version(version):
        raise reader.fail("torch-version", f"must be a version like \"2.4\", not {version!r}")
    return {"torch_version": version.strip()}


def _baseline(reader: Reader, key: Key) -> dict[str, Any] | None:
    """The one key that names a file to read: it must stay inside the repository."""
    baseline = reader.text("baseline")
    if baseline is None:
        return None
    resolved = os.path.normpath(os.path.join(reader.base, baseline))
    if not reader.explicit and not _inside(resolved, repository_folder(reader.base)):
        raise reader.fail("baseline", f"{baseline!r} is outside the repository; not read")
    return {"baseline": resolved}


def _output_format(reader: Reader, key: Key) -> dict[str, Any] | None:
    output_format = reader.text("output-format")
    if output_format is None:
        return None
    if output_format not in REPORTERS:
        raise reader.fail("output-format", f"names unknown format {output_format!r}"
                                           f"{nearest(output_format, list(REPORTERS))}; choose from {', '.join(REPORTERS)}")
    return {"output_format": output_format}


def _catalogue(reader: Reader, key: Key) -> dict[str, Any] | None:
    table = reader.table.get("catalogue")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise reader.fail("catalogue", "must be a table")
    sub = Reader(table, f"{reader.where} catalogue")
    unknown = [key for key in table if key not in CATALOGUE_KEYS]
    if unknown:
        raise sub.fail(unknown[0], f"is not a catalogue key{nearest(unknown[0], CATALOGUE_KEYS)}; "
                                   f"valid: {', '.join(CATALOGUE_KEYS)}")
    # the entries' classes: only a configuration with a [catalogue] table makes any
    from auditor.config.entries import InHouseModule, InHousePackage

    out: dict[str, Any] = {}
    packages = _entries(table.get("gpu-only-packages"), "gpu-only-packages", sub, InHousePackage)
    modules = _entries(table.get("gpu-only-modules"), "gpu-only-modules", sub, InHouseModule)
    if packages:
        out["packages"] = packages
    if modules:
        out["modules"] = modules
    portable = sub.strings("portable-modules")
    if portable:
        out["portable_modules"] = tuple(p.strip() for p in portable)
    return out


def _components(reader: Reader, key: Key) -> dict[str, Any] | None:
    """`[components]`: name = {paths = [globs], kind = "package"}, or name = [globs] (a package).
    Globs are relative to the scanned folder; a glob naming a folder holds what is inside it."""
    table = reader.table.get("components")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise reader.fail("components", 'must be a table of name = {paths = ["glob", ...], kind = "..."}')
    # the component kinds (rules/components.toml): only a configuration that names components reads them
    from auditor.analysis.components import kinds

    valid = kinds()
    out = []
    for name, value in table.items():
        sub = Reader(value if isinstance(value, dict) else {"paths": value}, f"{reader.where} components.{name}")
        unknown = [k for k in sub.table if k not in ("paths", "kind")]
        if unknown:
            raise sub.fail(unknown[0], f"is not a component key{nearest(unknown[0], ['paths', 'kind'])}; "
                                       "valid: paths, kind")
        globs = sub.strings("paths")
        if not globs:
            raise sub.fail("paths", "must name at least one glob")
        kind = (sub.text("kind") or "package").strip().lower()
        if kind not in valid:
            raise sub.fail("kind", f"names unknown kind {kind!r}{nearest(kind, valid)}; choose from {', '.join(valid)}")
        out.append((str(name), kind, tuple(g.strip() for g in globs)))
    return {"components": tuple(out)}


def _entries(value: Any, key: str, reader: Reader, kind: type) -> tuple:
    """A list of names, or of tables {name = ..., rule = ..., ...} with the entry's fields."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise reader.fail(key, "must be a list of names or tables")
    reader.bounded(value, key)
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


# -- reading the command line -------------------------------------------------------------------------

def _cli_excludes(value: list[str] | None, cwd: str) -> tuple[str, ...] | None:
    return None if value is None else tuple(anchor(p, cwd) for p in split(value) or ())


def _cli_extend_exclude(settings: Any, value: list[str] | None, cwd: str) -> Any:
    if not value:
        return settings
    return replace(settings, excludes=(*settings.excludes, *(anchor(p, cwd) for p in split(value) or ())))


def _cli_no_baseline(settings: Any, value: bool, cwd: str) -> Any:
    """No baseline, and so no fail-on-regression from the configuration (given here, it stays: and
    then asks for a baseline)."""
    if not value:
        return settings
    from_file = settings.origin("fail-on-regression") != "--fail-on-regression"
    return replace(settings, baseline=None, fail_on_regression=settings.fail_on_regression and not from_file)


def _cli_regression_if_baseline(settings: Any, value: bool, cwd: str) -> Any:
    """The score gate of a repository with a baseline is "no lower than the baseline's": the
    --fail-under of this command line (the hook's default threshold) gives way; one the
    configuration sets stays."""
    if not value or settings.baseline is None:
        return settings
    from_here = settings.origin("fail-under") == "--fail-under"
    return replace(settings, fail_on_regression=True, fail_under=() if from_here else settings.fail_under)


def _cli_max_file_size(value: float, cwd: str) -> int:
    if not math.isfinite(value) or value > MAX_FILE_SIZE_MB:
        raise ConfigError(f"--max-file-size must be a number of MB from 0.001 to {MAX_FILE_SIZE_MB:,}")
    return int(value * 1024 * 1024)


def _cli_fail_under(value: float | None, cwd: str) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ConfigError("--fail-under must be a number from 0 to 100")
    return value


def _cli_targets(value: list[str] | None, cwd: str) -> tuple[str, ...] | None:
    if not value:
        return None
    choices = registry.gate_names()
    targets = [name.lower() for name in split(value) or ["overall"]]
    for name in targets:
        if name not in choices:
            raise ConfigError(f"unknown --target {name!r}{nearest(name, choices)}; choose from "
                              f"{', '.join(choices)}")
    return tuple(targets)


def _cli_fail_on(value: str | None, cwd: str) -> str | None:
    return None if value is None else severity_name(value, "--fail-on")


def _cli_torch_version(value: str | None, cwd: str) -> str | None:
    if value is not None and not valid_version(value):
        raise ConfigError(f"--torch-version {value!r} is not a version; give e.g. 2.4 or 2.4.1")
    return value.strip() if value is not None else None


def _cli_split(value: list[str] | None, cwd: str) -> list[str] | None:
    return split(value)


def _cli_path(value: Path | None, cwd: str) -> str | None:
    return str(value) if value else None


def _cli_absolute(value: Path | None, cwd: str) -> str | None:
    return os.path.abspath(value) if value is not None else None


def _cli_choice(value: StrEnum | None, cwd: str) -> str | None:
    return value.value if value is not None else None


# -- the table ----------------------------------------------------------------------------------------

_TUPLE = tuple[str, ...]
KEYS: tuple[Key, ...] = (
    # -- rule selection
    Key("select", "Only these rules: codes, prefixes (LK2), names, or ALL; comma-separated.",
        field="select", type=_TUPLE | None, default=None, file=_strings,
        flags=("--select",), option=list[str] | None, panel=RULES, cli=_cli_split),
    Key("extend-select", "Rules to add to the selection.",
        field="extend_select", type=_TUPLE, default=(), file=_strings,
        flags=("--extend-select",), option=list[str] | None, panel=RULES, cli=_cli_split),
    Key("ignore", "Skip these rules (same forms as --select).",
        field="ignore", type=_TUPLE | None, default=None, file=_strings,
        flags=("--ignore",), option=list[str] | None, panel=RULES, cli=_cli_split),
    # (glob, rule selectors): a glob without a slash matches a file name, one with a slash an
    # absolute path (config globs are anchored at the configuration's folder, CLI ones at the cwd).
    Key("per-file-ignores", "Rules not reported in the files a glob matches.",
        field="per_file_ignores", type=tuple[tuple[str, _TUPLE], ...], default=(), file=_per_file_ignores),
    Key("severity", "A severity per rule code or name.",
        field="severity", type=tuple[tuple[str, str], ...], default=(), file=_severity),
    # -- file selection (the same glob forms as per-file-ignores)
    Key("exclude", "Skip files and folders matching this glob (replaces the configuration's `exclude`).",
        field="excludes", type=_TUPLE, default=(), file=_excludes,
        flags=("--exclude",), option=list[str] | None, panel=FILES, cli=_cli_excludes),
    Key("extend-exclude", "More globs to skip.", file=_read_with_exclude, origin="exclude",
        flags=("--extend-exclude",), option=list[str] | None, panel=FILES, after=_cli_extend_exclude),
    Key("force-exclude", "Apply the excludes and .gitignore to files named explicitly too (what pre-commit needs).",
        field="force_exclude", type=bool, default=False, file=_boolean,
        flags=("--force-exclude/--no-force-exclude",), option=bool | None, panel=FILES,
        extra={"show_default": False}),
    Key("respect-gitignore", "Skip what .gitignore files ignore (default: respect).",
        field="respect_gitignore", type=bool, default=True, file=_boolean,
        flags=("--respect-gitignore/--no-respect-gitignore",), option=bool | None, panel=FILES,
        extra={"show_default": False}),
    Key("stdin-filename", "With `-` as the path: read the source from stdin and check it as this file (its kind, "
        "configuration and reported path); an editor's way in, as ruff's.",
        to="request.stdin_filename", flags=("--stdin-filename",), option=str | None, panel=FILES,
        extra={"show_default": False}),
    Key("max-file-size", "Skip files larger than this many MB.",
        field="max_bytes", type=int, default=DEFAULT_MAX_BYTES,
        flags=("--max-file-size",), option=float, option_default=DEFAULT_MAX_BYTES / 1024 / 1024, panel=FILES,
        extra={"min": 0.001}, cli=_cli_max_file_size),
    # -- gates
    Key("fail-under", "Exit 1 when a chosen score (see --target) is below N.",
        field="fail_under", type=tuple[tuple[str, float], ...], default=(), file=_fail_under,
        to="fail_under_number",  # auditor.config.load aims it at the targets
        flags=("--fail-under",), option=float | None, panel=GATES, extra={"min": 0, "max": 100},
        cli=_cli_fail_under),
    Key("targets", TARGET_HELP.format(choices="or a target"),
        field="targets", type=_TUPLE, default=("overall",), file=_targets,
        flags=("--target", "-t"), option=list[str] | None, panel=GATES, cli=_cli_targets, shown_help=_target_help),
    Key("components", "Components named by the user: name = {paths = [globs], kind = \"package\"} (checked before "
        "the layout's own).",
        field="components", type=tuple[tuple[str, str, _TUPLE], ...], default=(), file=_components),
    Key("overall-targets", "The targets the overall score averages (default: the catalogue's named, versioned set).",
        field="overall_targets", type=_TUPLE, default=(), file=_overall_targets),
    Key("fail-on", "Exit 1 when a reported finding of this severity or worse exists: blocker, major, minor, info "
        "(pre-commit runs on files: minor unless configured).",
        field="fail_on", type=str | None, default=None, file=_fail_on,
        flags=("--fail-on",), option=str | None, panel=GATES, cli=_cli_fail_on),
    Key("fail-on-regression", "Exit 1 when a score is lower than the baseline's (needs a baseline).",
        field="fail_on_regression", type=bool, default=False, file=_boolean,
        flags=("--fail-on-regression",), option=bool | None, panel=GATES, extra={"show_default": False}),
    Key("exit-zero", "Exit 0 even when a gate fails (errors still exit 2).",
        field="exit_zero", type=bool, default=False,
        flags=("--exit-zero",), option=bool, option_default=False, panel=GATES),
    # -- baselines and changed lines
    Key("baseline", "Report and gate only findings this baseline file does not hold.",
        field="baseline", type=str | None, default=None, file=_baseline,  # an absolute path
        flags=("--baseline",), option=Path | None, panel=BASELINES, cli=_cli_absolute),
    Key("no-baseline", "Ignore the baseline the configuration names (and its fail-on-regression).",
        flags=("--no-baseline",), option=bool, option_default=False, panel=BASELINES, after=_cli_no_baseline),
    # after no-baseline: it reads the baseline that is left
    Key("regression-if-baseline", "With a baseline, gate on --fail-on-regression instead of the --fail-under given "
        "on this command line (the pre-push hook's score gate: a legacy repository pushes while no score drops).",
        flags=("--regression-if-baseline",), option=bool, option_default=False, panel=BASELINES,
        after=_cli_regression_if_baseline),
    Key("write-baseline", "Record every current finding (and unreadable file) in FILE.", to="request.write_baseline",
        flags=("--write-baseline",), option=Path | None, panel=BASELINES),
    Key("diff-base", "Report and gate only findings on lines changed since the branch left this git ref (its "
        "merge-base with HEAD, as REF...HEAD; staged, unstaged and untracked changes included).",
        field="diff_base", type=str | None, default=None,  # only findings on lines changed since it count
        flags=("--diff-base",), option=str | None, panel=BASELINES),
    Key("add-noqa", "Write a suppression comment on the line of every current finding, then exit.",
        to="request.add_noqa", flags=("--add-noqa",), option=bool, option_default=False, panel=BASELINES),
    # -- fixes
    Key("fix", "Apply the safe fixes, then report what remains.", to="request.fix",
        flags=("--fix",), option=bool, option_default=False, panel=FIXES),
    Key("unsafe-fixes", "Also apply (with --fix or --diff) and mark the unsafe fixes (also the editor's code "
        "actions, `audit server`).",
        field="unsafe_fixes", type=bool, default=False, file=_boolean,
        flags=("--unsafe-fixes",), option=bool | None, panel=FIXES, extra={"show_default": False}),
    Key("fix-tests", "With --fix or --diff: also rewrite test code's device ties to the project's device (left as "
        "they are by default: a test's CUDA device is often what it tests).",
        field="fix_tests", type=bool, default=False, file=_boolean,
        flags=("--fix-tests",), option=bool | None, panel=FIXES, extra={"show_default": False}),
    Key("diff", "Print the fixes as a unified diff and write nothing; exit 1 when there is something to fix.",
        to="request.diff", flags=("--diff",), option=bool, option_default=False, panel=FIXES),
    Key("exit-non-zero-on-fix", "With --fix: exit 1 when a file was changed, even if no gate fails (ruff's).",
        to="request.exit_non_zero_on_fix", flags=("--exit-non-zero-on-fix",), option=bool, option_default=False,
        panel=FIXES),
    Key("show-fixes", "With --fix or --diff: list the fixes per file.", to="request.show_fixes",
        flags=("--show-fixes",), option=bool, option_default=False, panel=FIXES),
    Key("torch-version", "Oldest PyTorch the project supports (default: the configuration's torch-version, else "
        "read from its dependency files); fixes needing a newer one stay suggestions.",
        field="torch_version", type=str | None, default=None, file=_torch_version,
        flags=("--torch-version",), option=str | None, panel=FIXES, extra={"show_default": False},
        cli=_cli_torch_version),
    # -- output
    Key("output-format", "Report format (default: text; concise under pre-commit and in CI when stdout is not a "
        "terminal).",
        field="output_format", type=str | None, default=None, file=_output_format,  # None: see auditor.run
        flags=("--format", "--output-format", "-f"), option=OutputFormat | None, panel=OUTPUT,
        extra={"show_default": False}, cli=_cli_choice),
    Key("output", "Write the report to FILE instead of stdout.", to="request.output",
        flags=("--output", "--output-file", "-o"), option=Path | None, panel=OUTPUT),
    Key("color", "Colour in the text report.", to="request.color",
        flags=("--color",), option=Color, option_default=Color.auto, panel=OUTPUT, cli=_cli_choice),
    Key("quiet", "Print the findings and nothing else: no summary, scores or warnings (ruff's -q).",
        field="quiet", type=bool, default=False,
        flags=("--quiet", "-q"), option=bool, option_default=False, panel=OUTPUT),
    Key("silent", "Print nothing, write no report: the exit code says it all (ruff's -s); an error that exits 2 "
        "still says why.",
        field="silent", type=bool, default=False,
        flags=("--silent", "-s"), option=bool, option_default=False, panel=OUTPUT),
    Key("summary-only", "Text, concise and markdown reports: the verdicts, scores and summary without the findings.",
        field="summary_only", type=bool, default=False,
        flags=("--summary-only",), option=bool, option_default=False, panel=OUTPUT),
    Key("show-files", "List the files this run would audit, one per line, and exit (ruff's).",
        to="request.show_files", flags=("--show-files",), option=bool, option_default=False, panel=OUTPUT),
    Key("show-settings", "Print the settings this run would use, with where each came from, and exit (ruff's).",
        to="request.show_settings", flags=("--show-settings",), option=bool, option_default=False, panel=OUTPUT),
    Key("statistics", "Print a count per rule instead of the findings.",
        field="statistics", type=bool, default=False,
        flags=("--statistics",), option=bool, option_default=False, panel=OUTPUT),
    Key("show-suppressed", "Also list findings that comments, per-file-ignores or the baseline silence.",
        field="show_suppressed", type=bool, default=False, file=_boolean,
        flags=("--show-suppressed",), option=bool | None, panel=OUTPUT, extra={"show_default": False}),
    # -- configuration
    Key("config", "Read this configuration file (lockin-auditor.toml or a pyproject.toml) instead of looking for "
        "one.", to="config.config", flags=("--config",), option=Path | None, panel=CONFIG, cli=_cli_path),
    Key("isolated", "Read no configuration file.", to="config.isolated",
        flags=("--isolated",), option=bool, option_default=False, panel=CONFIG),
    # in-house GPU-only packages and modules (auditor.config.entries), portable wrapper modules
    Key("catalogue", "What the project adds to the catalogue.", file=_catalogue),
    # -- running
    Key("jobs", "Worker processes (0: every core available).",
        field="jobs", type=int | None, default=None,
        flags=("--jobs", "-j"), option=int, option_default=0, panel=RUNNING, extra={"min": 0},
        cli=lambda value, cwd: value or None),
    Key("no-cache", "Neither read nor write the results cache.",
        field="cache", type=bool, default=True,
        flags=("--no-cache",), option=bool, option_default=False, panel=RUNNING, cli=lambda value, cwd: not value),
    Key("cache-dir", "Where the results cache lives (default: .lockin_auditor_cache/ at the project root).",
        field="cache_dir", type=str | None, default=None,
        flags=("--cache-dir",), option=Path | None, panel=RUNNING, extra={"show_default": False}, cli=_cli_path),
    Key("cache-check", "How a cached file is known unchanged: stat (size and mtime, as ruff) or content (a hash of "
        "every file, for trees whose mtimes cannot be trusted).",
        field="cache_check", type=str, default="stat",  # stat: size + mtime say a file is unchanged; content: its hash
        flags=("--cache-check",), option=CacheCheck, option_default=CacheCheck.stat, panel=RUNNING, cli=_cli_choice),
)
# The settings the catalogue row sets (it declares no field of its own: these three).
CATALOGUE_FIELDS = (("packages", tuple["InHousePackage", ...], ()), ("modules", tuple["InHouseModule", ...], ()),
                    ("portable_modules", _TUPLE, ()))  # wrapper modules known to be portable



# What the rest of the package reads off the table (derived when asked, so a row added to KEYS
# before the first use is everywhere: tests/test_config.py adds one).
def file_keys() -> tuple[str, ...]:
    """The configuration file's keys, in table order."""
    return tuple(key.name for key in KEYS if key.file is not None)


def options() -> tuple[Key, ...]:
    """The rows `audit scan` has an option for, in the order `--help` lists them."""
    return tuple(key for key in KEYS if key.flags)


def settings_fields() -> list[tuple[str, Any, Any]]:
    """(name, type, default) of every Settings field the table declares, in table order."""
    declared = [(key.field, key.type, key.default) for key in KEYS if key.field is not None and key.type is not None]
    return [*declared, *CATALOGUE_FIELDS]
