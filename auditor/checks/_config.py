"""The config-value rules (LK105, LK305): a value under a key that chooses hardware, in YAML, JSON and
TOML configs. Keys and values are `[[config_value]]` rows in rules/images.toml: the key must be one
of the row's keys exactly (`device`, not `device_path` or `description`; a flag-style
`--distributed-backend` is `distributed_backend`) and the value must fullmatch the row's pattern
(`cuda:0`, not a path or a sentence)."""

from __future__ import annotations

import re

from auditor.checks.base import Rule
from auditor.context import FileContext
from auditor.readers.document import read_document

CONFIG_KINDS = frozenset({"yaml", "json-config", "toml-config"})


def config_key(key: str) -> str:
    """A key as the rows name it: `--distributed-backend` (a launcher's flags written as a YAML
    mapping, Megatron/NeMo style) and `distributed-backend` read as `distributed_backend`."""
    return key.lower().lstrip("-").replace("-", "_")


class ConfigValueRule(Rule):
    subject = "`{key}: {value}`"
    fields = frozenset({"key", "value", "what", "instead"})
    file_kinds = CONFIG_KINDS

    def check_file(self, ctx: FileContext) -> None:
        rows = [row for row in ctx.catalogue.table("images").get("config_value", []) if row["rule"] == self.name]
        if not rows:
            return
        compiled = [(frozenset(row["keys"]), tuple(row.get("path", ())), re.compile(row["value"]), row)
                    for row in rows]
        for tree in read_document(ctx).trees:
            for path, node, key in tree.walk():
                if node.shape != "scalar" or key is None or not path:
                    continue
                name = config_key(path[-1])
                for keys, parent, value, row in compiled:
                    if name in keys and value.fullmatch(node.value.strip()) and (
                            not parent or tuple(p.lower() for p in path[-1 - len(parent):-1]) == parent):
                        ctx.findings.append(ctx.make_finding(
                            self, key.line, key.column, node.end_line, node.end_column,
                            {"key": ".".join(path), "value": node.value, "what": row["what"],
                             "instead": row["instead"],
                             # a config is what a run picks and overrides: the value is a default
                             "__optional": ("setting", ".".join(path))}))
                        break
