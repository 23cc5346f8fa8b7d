"""Which files to read, and as what.

Directories are walked the way users expect from ruff: version-control folders, virtual
environments, site-packages, node_modules, build output and caches are skipped, and so is
whatever the .gitignore files (nested ones included) ignore. Explicit files are always read."""

from __future__ import annotations

import errno
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from auditor.model import FileError

CACHE_DIR_NAME = ".lockin_auditor_cache"
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__", "node_modules",
    "site-packages", "dist-packages", "build", "dist", "_build", "buck-out", ".eggs", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "__pypackages__", ".direnv", CACHE_DIR_NAME,
})
PYTHON_SUFFIXES = (".py", ".pyi")
CUDA_SUFFIXES = (".cu", ".cuh")


@dataclass(frozen=True)
class SourceFile:
    path: str  # what to open
    display: str  # POSIX path relative to the scanned root, as reported
    kind: str  # python | setup-py | requirements | pyproject | setup-cfg | cuda


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)


def _looks_like_requirements(name: str, parent: str) -> bool:
    lower = name.lower()
    if not lower.endswith((".txt", ".in")) or lower == "manifest.in":
        return False
    return "requirements" in lower or "constraints" in lower or "requirements" in parent.lower()


def file_kind(path: str, explicit: bool = False) -> str | None:
    """The reader a file needs, from its name; None when audit does not read it."""
    name = os.path.basename(path)
    lower = name.lower()
    if lower == "setup.py":
        return "setup-py"
    if lower.endswith(PYTHON_SUFFIXES):
        return "python"
    if lower == "pyproject.toml":
        return "pyproject"
    if lower == "setup.cfg":
        return "setup-cfg"
    if lower.endswith(CUDA_SUFFIXES):
        return "cuda"
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    if _looks_like_requirements(name, parent) or (explicit and lower.endswith((".txt", ".in")) and lower != "manifest.in"):
        return "requirements"
    return None


def display_path(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    return PurePosixPath(Path(rel)).as_posix() if os.sep != "/" else rel


class _GitIgnore:
    """The .gitignore files met on the way down, deepest last."""

    def __init__(self) -> None:
        self.layers: list[tuple[str, object]] = []

    def load(self, directory: str) -> bool:
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return False
        import pathspec

        self.layers.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))
        return True

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        for directory, spec in self.layers:
            rel = os.path.relpath(path, directory).replace(os.sep, "/")
            if is_dir:
                rel += "/"
            result = spec.check_file(rel)  # type: ignore[attr-defined]
            if result.include is not None:
                verdict = result.include
        return verdict


def _is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def _skip_dir(name: str, path: str, excludes: tuple[str, ...]) -> bool:
    return (name in SKIPPED_DIRS or name.endswith(".egg-info") or _is_virtualenv(path)
            or any(fnmatch.fnmatch(name, pattern) for pattern in excludes))


def discover(paths: list[str], root: str, respect_gitignore: bool = True,
             excludes: tuple[str, ...] = ()) -> Discovery:
    """Files under `paths` (files or directories), sorted by display path."""
    found = Discovery()
    seen: set[str] = set()

    def add(path: str, kind: str) -> None:
        display = display_path(path, root)
        if display not in seen:
            seen.add(display)
            found.files.append(SourceFile(path, display, kind))

    for given in paths:
        if os.path.isdir(given):
            _walk(given, root, found, add, respect_gitignore, excludes)
        else:
            kind = file_kind(given, explicit=True)
            if kind is not None:
                add(given, kind)
    found.files.sort(key=lambda f: f.display)
    found.errors.sort()
    return found


def _walk(top: str, root: str, found: Discovery, add, respect_gitignore: bool,
          excludes: tuple[str, ...]) -> None:
    ignore = _GitIgnore()
    stack: list[tuple[str, int]] = [(top, 0)]  # (directory, gitignore layers before it)
    if respect_gitignore:
        # .gitignore files above the scanned folder, up to the repository root, apply too.
        parents = []
        here = os.path.abspath(top)
        while True:
            parent = os.path.dirname(here)
            if os.path.isdir(os.path.join(here, ".git")) or parent == here:
                break
            here = parent
            parents.append(here)
        for directory in reversed(parents):
            ignore.load(directory)
    while stack:
        directory, depth = stack.pop()
        if respect_gitignore:
            ignore.layers = ignore.layers[:depth]
            ignore.load(directory)
        layers = len(ignore.layers)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            found.errors.append(FileError(display_path(directory, root), "read", f"cannot list directory: {exc.strerror}"))
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    _symlink(entry, root, found, add, ignore if respect_gitignore else None)
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                found.errors.append(FileError(display_path(entry.path, root), "read", exc.strerror or str(exc)))
                continue
            if respect_gitignore and ignore.ignored(entry.path, is_dir):
                continue
            if is_dir:
                if not _skip_dir(entry.name, entry.path, excludes):
                    subdirs.append(entry.path)
            elif not any(fnmatch.fnmatch(entry.name, p) for p in excludes):
                kind = file_kind(entry.path)
                if kind is not None:
                    add(entry.path, kind)
        for sub in reversed(subdirs):
            stack.append((sub, layers))


def _symlink(entry: os.DirEntry, root: str, found: Discovery, add, ignore: _GitIgnore | None) -> None:
    """Links to files are read; links to directories are not followed; loops become errors."""
    try:
        target_is_dir = os.path.isdir(entry.path)
        os.stat(entry.path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            found.errors.append(FileError(display_path(entry.path, root), "symlink-loop", "symbolic link loop; not followed"))
        elif file_kind(entry.path) is not None:
            found.errors.append(FileError(display_path(entry.path, root), "read", f"broken symbolic link: {exc.strerror}"))
        return
    if target_is_dir:
        return
    if ignore is not None and ignore.ignored(entry.path, False):
        return
    kind = file_kind(entry.path)
    if kind is not None:
        add(entry.path, kind)
