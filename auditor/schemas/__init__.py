"""JSON Schemas (draft 2020-12) shipped with the package: `config.schema.json` for the
configuration (`lockin-auditor.toml`, or `[tool.lockin-auditor]` in pyproject.toml), generated from
auditor.config.keys.KEYS by `config_schema()` (tests/test_schemas.py holds the shipped file to it,
so it cannot drift from what the loader reads; write it again with `python -m auditor.schemas`), and
`report.schema.json` for the JSON report (`--format json`, format_version 8; written by hand, as the
report's shape is pinned by tests/test_json_contract.py: change both, and bump its `const`, with
FORMAT_VERSION)."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from auditor.analysis.components import kinds as component_kinds
from auditor.config.keys import KEYS
from auditor.report import REPORTERS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
CONFIG_FILE = "config.schema.json"

_STRINGS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_SCORE = {"type": "number", "minimum": 0, "maximum": 100}


def _readers() -> dict[str, dict[str, Any]]:
    """What each file reader of auditor.config.keys accepts (a reader not named here fails the
    generation: a new kind of key needs its schema written once)."""
    entries = {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "object"}]}}
    return {
        "_strings": _STRINGS, "_excludes": _STRINGS, "_read_with_exclude": _STRINGS, "_targets": _STRINGS,
        "_overall_targets": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"},
                                                            "minItems": 1}]},
        "_boolean": {"type": "boolean"},
        "_per_file_ignores": {"type": "object", "additionalProperties": _STRINGS},
        "_severity": {"type": "object", "additionalProperties": {"type": "string"}},
        "_fail_under": {"oneOf": [_SCORE, {"type": "object", "additionalProperties": _SCORE}]},
        "_fail_on": {"type": "string"},
        "_baseline": {"type": "string"},
        "_torch_version": {"type": "string"},
        "_output_format": {"enum": sorted(REPORTERS)},
        "_components": {"type": "object", "additionalProperties": {"oneOf": [
            {"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1},
            {"type": "object", "additionalProperties": False, "required": ["paths"], "properties": {
                "paths": _STRINGS,
                "kind": {"enum": list(component_kinds())}}}]}},
        "_catalogue": {"type": "object", "additionalProperties": False, "properties": {
            "gpu-only-packages": entries, "gpu-only-modules": entries, "portable-modules": _STRINGS}},
    }


def config_schema() -> dict[str, Any]:
    """The configuration's schema, from the key table: every key the file may hold, nothing else
    (an unknown key stops the run, as the loader does)."""
    readers = _readers()
    properties: dict[str, Any] = {}
    for key in KEYS:
        if key.file is None:
            continue
        shape = dict(readers[key.file.__name__])
        shape["description"] = key.help
        properties[key.name] = shape
    return {"$schema": DRAFT, "title": "lockin-auditor configuration",
            "description": "lockin-auditor.toml, .lockin-auditor.toml, or the [tool.lockin-auditor] table of "
                           "pyproject.toml", "type": "object", "additionalProperties": False,
            "properties": properties}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def shipped(name: str) -> str:
    return files("auditor.schemas").joinpath(name).read_text(encoding="utf-8")
