"""Turning the configuration file and the command line into Settings (auditor.config.settings):
each key of the file is read, typed and checked by its row of the key table (auditor.config.keys),
and command-line options override the file, key by key.

A scanned repository is untrusted (CI runs `audit` on pull requests from forks), so its
configuration is only parsed, never executed: no key runs a command or names a module to
import, and the one key that names a file to read (`baseline`) must stay inside the repository
(auditor.config.files refuses a configuration file that links out of it). An unknown key, rule,
severity or target is an error that names the nearest valid spelling."""

from __future__ import annotations

import os
from typing import Any

from auditor.config import ConfigError, keys, nearest
from auditor.config.files import TABLE, find_config, read_config
from auditor.config.settings import Settings


def settings_from_table(table: dict, path: str, explicit: bool = False) -> dict[str, Any]:
    """The Settings fields a configuration table sets (only those it sets)."""
    where = os.path.relpath(path) if not os.path.isabs(path) or path.startswith(os.getcwd()) else path
    if os.path.basename(path) == "pyproject.toml":
        where += f" [tool.{TABLE}]"
    valid = keys.file_keys()
    unknown = [key for key in table if key not in valid]
    if unknown:
        key = unknown[0]
        raise ConfigError(f"{where}: unknown key {key!r}{nearest(key, valid)}; valid keys: {', '.join(valid)}")
    reader = keys.Reader(table, where, os.path.dirname(os.path.abspath(path)), explicit)
    out: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for row in keys.KEYS:
        values = row.file(reader, row) if row.file is not None else None
        if values is not None:
            out.update(values)
            origins[row.origin or row.name] = where
    out["origins"] = tuple(origins.items())
    return out


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
