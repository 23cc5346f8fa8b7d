"""Turning the configuration file and the command line into Settings (auditor.config.settings):
each key is read, typed and validated, and command-line flags override the file, key by key.

A scanned repository is untrusted (CI runs `audit` on pull requests from forks), so its
configuration is only parsed, never executed: no key runs a command or names a module to
import, and the one key that names a file to read (`baseline`) must stay inside the repository
(auditor.config.files refuses a configuration file that links out of it). An unknown key, rule,
severity or target is an error that names the nearest valid spelling."""

from __future__ import annotations

import math
import os
import re
from dataclasses import fields
from typing import Any

from auditor.config.errors import ConfigError, nearest
from auditor.config.files import TABLE, find_config, read_config, repository_folder
from auditor.config.settings import GATE_TARGETS, ModuleEntry, PackageEntry, Settings
from auditor.model import SEVERITIES
from auditor.report import REPORTERS

_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")


KEYS = ("select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude", "force-exclude",
        "respect-gitignore", "targets", "fail-under", "fail-on", "fail-on-regression", "torch-version", "severity",
        "catalogue", "baseline", "output-format", "show-suppressed")
CATALOGUE_KEYS = ("gpu-only-packages", "gpu-only-modules", "portable-modules")


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
        if output_format not in REPORTERS:
            raise reader.fail("output-format", f"names unknown format {output_format!r}"
                                               f"{nearest(output_format, list(REPORTERS))}; choose from {', '.join(REPORTERS)}")
        put("output_format", output_format, "output-format")

    pfi = table.get("per-file-ignores")
    if pfi is not None:
        if not isinstance(pfi, dict):
            raise reader.fail("per-file-ignores", 'must be a table of glob = ["CODE", ...]')
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
        if not explicit and not _inside(resolved, repository_folder(base)):
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
