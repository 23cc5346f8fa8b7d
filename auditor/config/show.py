"""`--show-settings` and `--show-files` (ruff's): what a run would use, printed instead of running.

The settings are the key table's (auditor.config.keys) in its order, one `key = value` line each
with where the value came from: the configuration file, the command line, or the default."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Any

from auditor.config.keys import CATALOGUE_FIELDS, KEYS
from auditor.config.settings import Settings


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def settings_lines(settings: Settings) -> list[str]:
    """`key = value  # where` per setting, the configuration file first."""
    origins = dict(settings.origins)
    lines = [f"# configuration: {settings.config_path or 'none (defaults and the command line)'}"]
    rows = [(key.name, key.field, key.default) for key in KEYS if key.field is not None and key.type is not None]
    rows += [(name.replace("_", "-"), name, default) for name, _, default in CATALOGUE_FIELDS]
    for name, field_name, default in rows:
        value = getattr(settings, field_name)
        where = origins.get(name) or ("default" if _plain(value) == _plain(default) else "command line")
        lines.append(f"{name} = {json.dumps(_plain(value), ensure_ascii=False, default=str)}  # {where}")
    return lines
