"""Settings: one frozen object built from the configuration file and the command line, carried
through discovery, the cache key, the suppressions, the gates and the reports (auditor.config.load
builds it)."""

# No `from __future__ import annotations`: with string annotations, @dataclass parses each of
# Settings' fields for ClassVar on every start-up (~5 ms of a pre-commit run).
from dataclasses import dataclass, field

from auditor.model import TARGETS
from auditor.read.text import DEFAULT_MAX_BYTES

GATE_TARGETS = ("overall", *TARGETS)
# The rules an in-house catalogue entry may name (the dependency and kernel-library rules).
PACKAGE_RULE = "nvidia-only-runtime-package"
MODULE_RULE = "gpu-kernel-library"


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
