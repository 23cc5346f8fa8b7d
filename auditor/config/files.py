"""Finding and reading the configuration file.

Where it comes from (as ruff and mypy find theirs): `--config FILE`, else the first of
`lockin-auditor.toml`, `.lockin-auditor.toml` and a `pyproject.toml` holding a
`[tool.lockin-auditor]` table, looking in the scanned folder and then each folder above it, up to
the repository root (the folder holding `.git`). `--isolated` reads none. A configuration file
that is a link out of the repository is refused: reading it would read outside the scanned tree."""

from __future__ import annotations

import os

from auditor.config import ConfigError

TABLE = "lockin-auditor"
CONFIG_NAMES = ("lockin-auditor.toml", ".lockin-auditor.toml", "pyproject.toml")
MAX_CONFIG_BYTES = 1024 * 1024


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


def _read(path: str, explicit: bool) -> bytes:
    """The file's bytes (regular files only, never more than MAX_CONFIG_BYTES + 1, so a FIFO or
    /dev/zero cannot hang or flood the run); a discovered file that is a link out of its
    repository is refused: reading it would read outside the scanned tree (issue 20, D24)."""
    # reading's module (tokenize): the command line imports this module at start-up (`audit --version` too)
    from auditor.read.text import SourceError, read_regular_file

    if not explicit and os.path.islink(path):
        root = os.path.realpath(repository_folder(os.path.dirname(os.path.abspath(path))))
        if not os.path.realpath(path).startswith(root + os.sep):
            raise ConfigError(f"{path} is a link out of the repository; not read (pass --config or --isolated)")
    try:
        return read_regular_file(path, MAX_CONFIG_BYTES + 1, follow_symlinks=True)
    except SourceError as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.message}") from None


def _has_table(pyproject: str) -> bool:
    """Whether a pyproject.toml configures us: a byte test first (most do not mention us), then the parse."""
    try:
        data = _read(pyproject, explicit=False)
    except ConfigError:
        return False  # a link out of the repository or an unreadable file: nothing of ours to read
    if TABLE.encode() not in data:
        return False
    try:
        table = _parse(data, pyproject).get("tool", {})
    except ConfigError:
        return True  # ours, but broken: reading it will say what is wrong
    return isinstance(table, dict) and TABLE in table


def _parse(data: bytes, path: str) -> dict:
    import tomllib

    # tomllib's guard: only a run that reads a configuration file needs it (not `audit --version`)
    from auditor.read import toml_guard

    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} kB; not a configuration file")
    try:
        return toml_guard.loads(data.decode("utf-8"))  # no key shape tomllib reads in quadratic time
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it or run with --isolated") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise ConfigError(f"{path}: not valid TOML (nested too deeply); fix it or run with --isolated") from None


def repository_folder(directory: str) -> str:
    """The repository `directory` is in (discover's definition, as git's), or `directory` itself."""
    # discovery's modules: only a configuration file that is a link, or a baseline, needs the repository
    # root, and the command line imports this module at start-up (`audit --version` too)
    from auditor.discover.ignore import repository_root

    return repository_root(directory) or directory


def read_config(path: str, explicit: bool = False) -> dict:
    """The `[tool.lockin-auditor]` table (pyproject) or the whole file (lockin-auditor.toml).

    A discovered file that is a link out of its repository is refused: reading it would read
    outside the scanned tree."""
    parsed = _parse(_read(path, explicit), path)
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
