"""Settings: one frozen object built from the configuration file and the command line, carried
through discovery, the cache key, the suppressions, the gates and the reports (auditor.config.load
builds it). Its fields, with their types and defaults, are the rows of the key table
(auditor.config.keys): a new key is one row there."""

# No `from __future__ import annotations`: with string annotations, @dataclass parses each of
# Settings' fields for ClassVar on every start-up (~5 ms of a pre-commit run).
from dataclasses import dataclass, field

from auditor.config.keys import settings_fields


def _fields_from_the_key_table(cls: type) -> type:
    """The table's fields first, in its order, then the class's own (what no key sets)."""
    own = dict(cls.__dict__.get("__annotations__", {}))
    annotations = {}
    for name, kind, default in settings_fields():
        annotations[name] = kind
        setattr(cls, name, default)
    cls.__annotations__ = {**annotations, **own}
    return dataclass(frozen=True)(cls)


@_fields_from_the_key_table
class Settings:
    """Everything a run was asked to do. Frozen: build a new one with `dataclasses.replace`."""

    # -- what no key sets -------------------------------------------------------------------------
    progress: bool = False  # a progress bar on stderr (auditor.cli decides)
    config_path: str | None = None  # the file these came from, for messages
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # key -> where it was set

    def __post_init__(self) -> None:
        # Callers (tests, the bench) pass lists; keep the object hashable and immutable.
        for name in ("select", "ignore"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        for name in ("extend_select", "excludes", "targets", "overall_targets", "portable_modules", "packages",
                     "modules"):
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
