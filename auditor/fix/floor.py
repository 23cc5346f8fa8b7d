"""The project's torch floor: the lowest PyTorch version it says it supports.

A fix whose replacement needs a newer torch than that stays a suggestion naming the version it
needs (catalogue 5.3: "apply it only when the project's torch floor is at least that version").
The floor is read once per run, before any file is checked, from the dependency files at the top
of the project (the folder holding .git or pyproject.toml, as for the cache): `pyproject.toml`,
`setup.py`, `setup.cfg`, `requirements*.txt` / `*.in`, the files of a `requirements/` folder, conda
environment files and Dockerfiles (`pip install torch==...`, `pytorch=2.3` in conda).
Nested dependency files (examples/, docs/) describe other programs and do not lower it.
`--torch-version` (or the config's torch-version) overrides what the files say.

Each declaration's lower bound counts (`torch>=2.4` -> 2.4, `torch==2.3.1+cu121` -> 2.3.1,
Poetry's `^2.1` -> 2.1); the floor is the lowest of them, since every declared range must work.
A declaration without a lower bound (`torch`) does not lower it. When nothing declares one, the
floor is unknown and fixes are held to what torch 2.0 has (the oldest release the catalogue
checked).

Readers are registered per file kind (`@floor_reader("requirements")`), so a new kind of file
(conda environments, container files) contributes with one function. They get the text and
return the lower bounds they find; they never execute anything and a malformed file gives none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from auditor.cache.folder import read_in_folder, write_in_folder
from auditor.catalogue import load_catalogue
from auditor.config.keys import valid_version
from auditor.discover.files import name_kind
from auditor.discover.kinds import BY_NAME
from auditor.read import toml_guard

ASSUMED_FLOOR = "2.0"  # what an unknown floor is taken to be (the oldest release the catalogue checked)
MAX_FLOOR_FILE_BYTES = 1024 * 1024

FloorReader = Callable[[str], Iterable[str]]
FLOOR_READERS: dict[str, FloorReader] = {}


def floor_reader(kind: str) -> Callable[[FloorReader], FloorReader]:
    """Register the function that finds torch lower bounds in files of `kind` (a discovery kind)."""
    def register(function: FloorReader) -> FloorReader:
        FLOOR_READERS[kind] = function
        return function
    return register


def version_tuple(version: str) -> tuple[int, ...]:
    """"2.3.1+cu121" -> (2, 3, 1); "2.4.0a0" -> (2, 4, 0); "2.4.*" -> (2, 4)."""
    parts: list[int] = []
    for piece in version.split("+", 1)[0].split("."):
        digits = re.match(r"\d{1,9}", piece)
        if digits is None:
            break
        parts.append(int(digits.group(0)))
        if digits.group(0) != piece:
            break
    return tuple(parts)


@dataclass(frozen=True)
class TorchFloor:
    """The lowest torch the project supports; `version` None when nothing says."""

    version: str | None = None
    source: str = ""  # "pyproject.toml", "requirements.txt", "--torch-version", "config", ...

    def allows(self, needed: str | None) -> bool:
        if not needed:
            return True
        have = version_tuple(self.version or ASSUMED_FLOOR)
        return have >= version_tuple(needed)

    def describe(self) -> str:
        """"torch 2.4 (from pyproject.toml)" or a note that nothing declares it."""
        if self.version is None:
            return (f"no torch lower bound found in the project's dependency files (assumed {ASSUMED_FLOOR}; "
                    f"set it with --torch-version)")
        return f"torch {self.version} (from {self.source})" if self.source else f"torch {self.version}"

    def key(self) -> str | None:
        """What the cache key keeps: fixes and their classes depend on it."""
        return self.version


# -- requirement strings -------------------------------------------------------------------------
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)", re.S)
_CLAUSE = re.compile(r"(===|==|>=|~=|<=|!=|>|<|\^|~|=)?\s*v?(\d[\w.*+!-]*)")
_LOWER_OPS = {"===", "==", ">=", "~=", ">", "^", "~", "=", ""}
_WHEEL_VERSION = re.compile(r"/torch-(\d[\w.]*?)(?:%2[bB]|\+|-)", re.IGNORECASE)


def is_torch(name: str) -> bool:
    return re.sub(r"[-_.]+", "-", name).lower() in ("torch", "pytorch")


def lower_bound(specifier: str, poetry: bool = False) -> str | None:
    """The lowest version a PEP 440 (or, with `poetry`, a Poetry) specifier allows; None when
    unbounded below. A union (`^1.13 || ^2.0`) is bounded by its lowest alternative; a bare
    version (`2.1.0`) is a pin only in Poetry."""
    bounds = []
    for alternative in specifier.split("||"):
        found = []
        for op, version in _CLAUSE.findall(alternative.strip().strip("()")):
            if (op or poetry) and op in _LOWER_OPS:
                found.append(version.rstrip(".*").split("+", 1)[0])
        if not found:
            return None  # one alternative without a lower bound: nothing is ruled out
        bounds.append(max(found, key=version_tuple))
    return min(bounds, key=version_tuple) if bounds else None


def requirement_bound(text: str) -> str | None:
    """The lower bound of a PEP 508 requirement on torch; None for other packages or no bound."""
    text = text.split(";", 1)[0].strip()
    match = _NAME.match(text)
    if match is None or not is_torch(match.group(1)):
        return None
    rest = match.group(3).strip()
    if rest.startswith("@"):
        wheel = _WHEEL_VERSION.search(rest)
        return wheel.group(1) if wheel else None
    return lower_bound(rest) if rest else None


# -- readers ---------------------------------------------------------------------------------------
@floor_reader("requirements")
def _requirements(text: str) -> Iterable[str]:
    for line in text.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].split(" --", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        bound = requirement_bound(line)
        if bound:
            yield bound


@floor_reader("pyproject")
def _pyproject(text: str) -> Iterable[str]:
    try:
        data = toml_guard.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return []
    strings: list[str] = []
    project = _table(data.get("project"))
    strings += _strings(project.get("dependencies"))
    for group in _table(project.get("optional-dependencies")).values():
        strings += _strings(group)
    for group in _table(data.get("dependency-groups")).values():
        strings += _strings(group)
    strings += _strings(_table(data.get("build-system")).get("requires"))
    tool = _table(data.get("tool"))
    strings += _strings(_table(tool.get("uv")).get("dev-dependencies"))
    for group in _table(_table(tool.get("pdm")).get("dev-dependencies")).values():
        strings += _strings(group)
    bounds = [b for b in map(requirement_bound, strings) if b]
    poetry = _table(tool.get("poetry"))
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies"),
              *(_table(g).get("dependencies") for g in _table(poetry.get("group")).values())]
    for table in tables:
        for name, value in _table(table).items():
            if is_torch(name):
                bounds += [b for b in map(_poetry_bound, value if isinstance(value, list) else [value]) if b]
    return bounds


def _poetry_bound(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("version")
    return lower_bound(value, poetry=True) if isinstance(value, str) else None


def _table(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


@floor_reader("setup-cfg")
def _setup_cfg(text: str) -> Iterable[str]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(value for _, value in parser.items("options.extras_require"))
    return [b for value in values for line in value.splitlines() if (b := requirement_bound(line.strip()))]


@floor_reader("setup-py")
def _setup_py(text: str) -> Iterable[str]:
    """String literals that are torch requirements (`"torch>=2.1"`), read token by token: comments
    and docstrings mentioning torch versions do not count, and nothing is executed."""
    import ast
    import io
    import tokenize

    bounds = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.STRING or "torch" not in token.string:
                continue
            try:
                value = ast.literal_eval(token.string)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, str) and len(value) < 200 and (bound := requirement_bound(value)):
                bounds.append(bound)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return bounds
    return bounds


def _through_reader(kind: str) -> FloorReader:
    """A floor reader for a kind whose own reader already finds requirements (conda environments,
    container files): their torch (or conda `pytorch`) requirements, read as the rules read them."""
    def read(text: str) -> Iterable[str]:
        from importlib import import_module

        # FileContext brings libcst: only when the floor is not memoised and a conda or Docker file must be read (this
        # module is on every run's path)
        from auditor.context import FileContext
        where, _, function = (BY_NAME[kind].reader or "").partition(":")
        ctx = FileContext(kind, text, load_catalogue(), kind)
        document = getattr(import_module(where), function)(ctx)
        return [b for req in document.dependencies.requirements
                if is_torch(req.key or req.name or "") and (b := lower_bound(req.specifier))]
    return read


for _kind in ("conda", "dockerfile"):
    floor_reader(_kind)(_through_reader(_kind))


# -- the project -----------------------------------------------------------------------------------
def floor_sources(project: str) -> list[tuple[str, str, int, int]]:
    """(path, kind, size, mtime_ns) of the dependency files at the top of the project and in its
    requirements/ folder; symlinks are not followed."""
    found: list[tuple[str, str, int, int]] = []
    for folder in (project, os.path.join(project, "requirements")):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        parent = os.path.basename(folder)
        for entry in entries:
            kind = name_kind(entry.name, parent=parent)
            if kind not in FLOOR_READERS:
                continue
            try:
                if entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found.append((entry.path, kind, info.st_size, info.st_mtime_ns))
            except OSError:
                continue
    return found


def read_floor(project: str, sources: list[tuple[str, str, int, int]] | None = None) -> TorchFloor:
    """The lowest lower bound any top-level dependency file declares for torch."""
    best: tuple[tuple[int, ...], str, str] | None = None
    for path, kind, size, _ in floor_sources(project) if sources is None else sources:
        try:
            if size > MAX_FLOOR_FILE_BYTES:
                continue
            with open(path, "rb") as handle:
                text = handle.read(MAX_FLOOR_FILE_BYTES).decode("utf-8", errors="replace")
            bounds = list(FLOOR_READERS[kind](text))
        except (OSError, ValueError, RecursionError):
            continue  # an unreadable or malformed file says nothing about the floor
        for bound in bounds:
            key = version_tuple(bound)
            if key and (best is None or key < best[0]):
                best = (key, ".".join(map(str, key)), os.path.relpath(path, project).replace(os.sep, "/"))
    if best is None:
        return TorchFloor()
    return TorchFloor(best[1], best[2])


MEMO_NAME = "torch-floor.json"
_MEMO_FORMAT = 1
_SETTLED_NS = 2_000_000_000  # as the cache: a file changed this recently may change again unseen


def resolve_floor(project: str, override: str | None = None, override_source: str = "--torch-version",
                  memo_dir: str | None = None) -> TorchFloor:
    """The floor for this run: the override when given, else what the project's files say.

    With `memo_dir` (the cache folder) the answer is kept there with the size and mtime of every
    file it came from, so a warm run stats a few files instead of parsing TOML and setup.py
    (about 15 ms of imports and reading, a tenth of a small warm run)."""
    if override:
        return TorchFloor(".".join(map(str, version_tuple(override))) or override, override_source)
    sources = floor_sources(project)
    stamps = [[os.path.relpath(p, project), kind, size, mtime] for p, kind, size, mtime in sources]
    memo = os.path.join(memo_dir, MEMO_NAME) if memo_dir else None
    if memo is not None:
        saved = _read_memo(memo)
        if saved is not None and saved.get("stamps") == stamps:
            return TorchFloor(saved.get("version"), saved.get("source", ""))
    floor = read_floor(project, sources)
    import time

    if memo is not None and all(mtime < time.time_ns() - _SETTLED_NS for *_, mtime in sources):
        _write_memo(memo, {"format": _MEMO_FORMAT, "stamps": stamps, "version": floor.version,
                           "source": floor.source})
    return floor


def _read_memo(path: str) -> dict | None:
    import json

    raw = read_in_folder(os.path.dirname(path), os.path.basename(path))
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):  # the cache folder may sit in the scanned repository
        return None
    if not isinstance(data, dict) or data.get("format") != _MEMO_FORMAT:
        return None
    version, source = data.get("version"), data.get("source", "")
    if version is not None and not (isinstance(version, str) and valid_version(version)):
        return None  # not what this module writes: read the files again
    return data if isinstance(source, str) else None


def _write_memo(path: str, data: dict) -> None:
    """In the cache folder, as the cache writes (auditor.cache.folder: never through a link, only in a
    folder of ours); a failure only costs the next run time."""
    import json

    write_in_folder(os.path.dirname(path), os.path.basename(path), json.dumps(data).encode())
