"""Which files to read, and as what.

Directories are walked the way users expect from ruff: version-control folders, virtual
environments (by name and by their pyvenv.cfg), site-packages, node_modules, build output and
caches are skipped, and so is whatever the .gitignore files ignore (nested ones, and those in
parent folders up to the repository root). Explicit files are always read. Symlinked files are
read, symlinked directories are not followed, and anything that cannot be listed or followed
becomes an error entry rather than an exception.

The walk is on the hot path of every run (23k files in a large checkout), so it avoids a stat
or a relpath per file: display paths are built by string concatenation, virtualenvs and
.gitignore files are spotted in the directory listing, and each .gitignore gets combined regexes
that reject the common no-match case before any pattern is tried (auditor/gitignore.py, which
matches in bounded time whatever the patterns)."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from auditor.gitignore import Layer
from auditor.kinds import match as match_kind
from auditor.model import FileError

CACHE_DIR_NAME = ".lockin_auditor_cache"
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__", "node_modules",
    "site-packages", "dist-packages", "build", "dist", "_build", "buck-out", ".eggs", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "__pypackages__", ".direnv", CACHE_DIR_NAME,
})
# A directory holding one of these files is a virtualenv or a tool cache (CACHEDIR.TAG is the
# cache-directory standard that pip, cargo and others follow).
MARKER_FILES = ("pyvenv.cfg", "CACHEDIR.TAG")
IGNORE_FILE_BYTES = 1024 * 1024  # a .gitignore larger than this is not read


@dataclass(frozen=True)
class SourceFile:
    path: str  # what to open
    display: str  # POSIX path relative to the scanned root, as reported
    kind: str  # a name from auditor.kinds.KINDS


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Paths named explicitly that are not read, with why ("not a regular file", "excluded", ...).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # What the walk depended on, when it can be reused (see `tree_unchanged`): [path, size, mtime_ns]
    # of every folder listed (an entry added, removed or renamed changes its mtime), every ignore
    # file read and the folders above the top up to the repository root. None: not reusable.
    stamps: list[list] | None = None


def tree_unchanged(stamps: list[list]) -> bool:
    """Whether a walk that recorded `stamps` would find the same files today."""
    try:
        for path, size, mtime_ns in stamps:
            info = os.stat(path)
            if info.st_mtime_ns != mtime_ns or (size >= 0 and info.st_size != size):
                return False
    except OSError:
        return False
    return True


def file_kind(path: str, explicit: bool = False, parent: str | None = None) -> str | None:
    """The kind of file (auditor.kinds) `path` is, from its name; None when audit does not read it.

    `parent` is the name of the containing folder, when the caller already knows it."""
    return match_kind(os.path.basename(path), explicit, parent, path)


def name_kind(name: str, explicit: bool = False, parent: str | None = None, path: str = "") -> str | None:
    """file_kind for a bare file name (the walk's hot path: no basename per entry)."""
    return match_kind(name, explicit, parent, path)


def display_path(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    return shown_name(PurePosixPath(Path(rel)).as_posix() if os.sep != "/" else rel)


def shown_name(name: str) -> str:
    """A file name as every report shows it: bytes that are not UTF-8 (which Python keeps as
    lone surrogates) become `\\xNN`, so JSON and text stay valid UTF-8 and agree."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


class _GitIgnore:
    """The .gitignore files met on the way down, deepest last; the deepest decisive one wins."""

    def __init__(self, stamps: list[list] | None = None) -> None:
        self.layers: list[Layer] = []
        self.stamps = stamps

    def load(self, directory: str, filename: str = ".gitignore") -> bool:
        if self.stamps is not None:
            _stamp(self.stamps, os.path.join(directory, filename))
        from auditor.textio import SourceError, read_regular_file, split_lines

        try:  # as git: never through a link, never a FIFO; a capped size
            data = read_regular_file(os.path.join(directory, filename), IGNORE_FILE_BYTES)
            layer = Layer(os.path.join(directory, ""), split_lines(data.decode("utf-8", "replace")))
        except (SourceError, ValueError):  # an unreadable, special or malformed .gitignore ignores nothing
            return False
        self.layers.append(layer)
        return True

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the patterns ignore `path` itself (the walk never enters an ignored folder)."""
        for layer in reversed(self.layers):
            verdict = layer.decide(path, is_dir, os.sep)
            if verdict is not None:
                return verdict
        return False

    def ignored_within(self, path: str, is_dir: bool, top: str) -> bool:
        """Whether `path` or a folder above it, below `top`, is ignored (where no walk came down)."""
        here = os.path.dirname(path)
        folders = []
        while len(here) > len(top) and here.startswith(top):
            folders.append(here)
            here = os.path.dirname(here)
        return any(self.ignored(folder, True) for folder in reversed(folders)) or self.ignored(path, is_dir)


def repository_root(directory: str) -> str | None:
    """The nearest folder at or above `directory` that holds a .git folder or file."""
    here = directory
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _load_parents(ignore: _GitIgnore, top: str, stamps: list[list] | None = None) -> None:
    """Git applies .git/info/exclude and the .gitignore files above `top` up to the repository root."""
    repo = repository_root(top)
    if stamps is not None:  # a .git or .gitignore appearing above `top` changes one of these folders
        here = top
        while True:
            parent = os.path.dirname(here)
            if parent == here or here == repo:
                break
            here = parent
            _stamp(stamps, here, directory=True)
        if repo is not None:  # not .git itself: every git command touches it
            _stamp(stamps, os.path.join(repo, ".git", "info"), directory=True)
    if repo is None:
        return
    if os.path.isdir(os.path.join(repo, ".git", "info")):
        ignore.load(repo, os.path.join(".git", "info", "exclude"))
    chain = []
    here = top
    while here != repo:
        here = os.path.dirname(here)
        chain.append(here)
    for directory in reversed(chain):
        ignore.load(directory)


def _stamp(stamps: list[list], path: str, directory: bool = False) -> None:
    """Record a folder's mtime or a file's size and mtime; a missing path records nothing (the
    stamp of the folder holding it covers its appearance)."""
    try:
        info = os.stat(path)
    except OSError:
        return
    stamps.append([path, -1 if directory else info.st_size, info.st_mtime_ns])


class _Excludes:
    """Exclude globs: one without a slash matches a file or folder name; an absolute one (config and
    CLI patterns are anchored by auditor.config.anchor) the absolute path; any other the display path.
    Each group is one regex (fnmatch's translation, whose stars do not backtrack): fnmatch keeps the
    last 32,768 patterns compiled, so 40,000 excludes were compiled again for every file (issue 20, D13)."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.names = _globs(p for p in patterns if "/" not in p.strip("/"))
        self.absolute = _globs(p.rstrip("/") for p in patterns if "/" in p.strip("/") and os.path.isabs(p))
        self.paths = _globs(p.strip("/") for p in patterns if "/" in p.strip("/") and not os.path.isabs(p))

    def __bool__(self) -> bool:
        return bool(self.names or self.paths or self.absolute)

    def match(self, name: str, display: str, path: str = "") -> bool:
        return ((self.names is not None and self.names.match(name) is not None)
                or (self.paths is not None and self.paths.match(display) is not None)
                or (bool(path) and self.absolute is not None and self.absolute.match(path) is not None))


def _globs(patterns) -> re.Pattern[str] | None:
    """One regex matching what fnmatch.fnmatchcase matches with any of `patterns` (None: none)."""
    sources = [fnmatch.translate(pattern) for pattern in patterns]
    return re.compile("|".join(f"(?:{source})" for source in sources)) if sources else None


def discover(paths: list[str], root: str, respect_gitignore: bool = True,
             excludes: tuple[str, ...] = (), stamp: bool = False, force_exclude: bool = False) -> Discovery:
    """Files under `paths` (files or directories), sorted by display path (relative to `root`).
    With `stamp`, a walk of directories also records what it depended on (`Discovery.stamps`).
    Files named explicitly are read whatever their name says, unless `force_exclude` applies the
    excludes and .gitignore to them too (pre-commit names every file it hands over)."""
    found = Discovery()
    seen: set[str] = set()
    stamps: list[list] | None = [] if stamp else None

    def add(path: str, display: str, kind: str) -> None:
        if display not in seen:
            seen.add(display)
            found.files.append(SourceFile(path, display, kind))

    root = os.path.abspath(root)
    explicit = _ExplicitFiles(tuple(excludes), respect_gitignore) if force_exclude else None
    for given in paths:
        if os.path.isdir(given):
            walk = _Walk(root, found, add, respect_gitignore, _Excludes(tuple(excludes)), stamps)
            walk.run(os.path.abspath(given))
            stamps = walk.stamps if walk.reusable else None
        else:
            stamps = None  # explicit files are cheap to find again
            reason = explicit.excluded(given) if explicit is not None else None
            kind = None if reason else explicit_kind(given)
            if kind is None:
                found.skipped.append((given, reason or _why_not_read(given)))
                continue
            # A link given by name is followed here, the one time: the reader never follows one.
            add(os.path.realpath(given) if os.path.islink(given) else given, display_path(given, root), kind)
    found.files.sort(key=lambda f: f.display)
    found.errors = sorted(set(found.errors))
    found.stamps = stamps if not found.errors else None
    return found


def explicit_kind(path: str) -> str | None:
    """The kind of a file named on the command line: by its name, else a Python script by its
    shebang (`#!/usr/bin/env python3` and no extension). Never opens anything but a regular file
    (a FIFO such as /dev/stdin would block)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return file_kind(path, explicit=True)  # reading it will report what is wrong
    kind = file_kind(path, explicit=True)
    if kind is not None or "." in os.path.basename(path):
        return kind
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    return "python" if first.startswith(b"#!") and b"python" in first else None


def _why_not_read(path: str) -> str:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return "not a kind of file audit reads (Python, requirements, pyproject.toml, setup.cfg, CUDA)"


class _ExplicitFiles:
    """--force-exclude: a file named explicitly is left out when the walk would leave it out: a
    folder above it (up to the repository root) is a skipped or excluded one, the file matches an
    exclude, or .gitignore ignores it."""

    def __init__(self, excludes: tuple[str, ...], respect_gitignore: bool) -> None:
        self.excludes = _Excludes(excludes)
        self.respect_gitignore = respect_gitignore
        self.ignores: dict[str, _GitIgnore] = {}  # per folder: the .gitignore files that apply in it

    def excluded(self, given: str) -> str | None:
        path = os.path.abspath(given)
        folder = os.path.dirname(path)
        stop = repository_root(folder) or os.getcwd()
        if not (folder + os.sep).startswith(os.path.join(stop, "")):
            stop = folder
        here = folder
        while here != stop and len(here) > len(stop):
            name = os.path.basename(here)
            if name in SKIPPED_DIRS or name.endswith(".egg-info"):
                return f"excluded (inside {name}/, which is never scanned)"
            if self.excludes and self.excludes.match(name, "", here):
                return "excluded (--force-exclude)"
            here = os.path.dirname(here)
        if self.excludes and self.excludes.match(os.path.basename(path), "", path):
            return "excluded (--force-exclude)"
        if self.respect_gitignore and self._gitignore(folder).ignored_within(path, False, stop):
            return "excluded by .gitignore (--force-exclude)"
        return None

    def _gitignore(self, folder: str) -> _GitIgnore:
        ignore = self.ignores.get(folder)
        if ignore is None:
            ignore = self.ignores[folder] = _GitIgnore()
            _load_parents(ignore, folder)
            if os.path.isfile(os.path.join(folder, ".gitignore")):
                ignore.load(folder)
        return ignore


class _Walk:
    """One directory tree: an explicit stack, so deep trees never hit the recursion limit."""

    def __init__(self, root: str, found: Discovery, add: Callable[[str, str, str], None],
                 respect_gitignore: bool, excludes: _Excludes, stamps: list[list] | None = None) -> None:
        self.root = root
        self.found = found
        self.add = add
        self.ignore = _GitIgnore(stamps) if respect_gitignore else None
        self.excludes = excludes
        self.stamps = stamps  # recorded when the caller may reuse this walk
        self.reusable = True  # False once the walk met something its stamps cannot cover
        self.top = root  # the folder this walk scans (set by run)
        self._real_top: str | None = None

    def error(self, display: str, kind: str, message: str) -> None:
        self.found.errors.append(FileError(display or ".", kind, message))

    def run(self, top: str) -> None:
        self.top, self._real_top = top, None
        prefix = display_path(top, self.root)
        prefix = "" if prefix == "." else prefix + "/"
        if self.ignore is not None:
            _load_parents(self.ignore, top, self.stamps)
            repo = repository_root(top)
            if repo is not None and self.ignore.layers and self.ignore.ignored_within(top, True, repo):
                return  # the folder named is itself ignored from above: as git, nothing in it counts
        # (directory, its display prefix, .gitignore layers that apply above it)
        stack: list[tuple[str, str, int]] = [(top, prefix, len(self.ignore.layers) if self.ignore else 0)]
        while stack:
            directory, prefix, depth = stack.pop()
            stack.extend(self.visit(directory, prefix, depth, is_top=directory == top))

    def visit(self, directory: str, prefix: str, depth: int, is_top: bool) -> list[tuple[str, str, int]]:
        """Add this folder's files; return its subfolders still to walk."""
        if self.stamps is not None:  # before listing: a change after it shows as a newer mtime
            _stamp(self.stamps, directory, directory=True)
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as exc:
            self.error(prefix.rstrip("/"), "read", f"cannot list directory: {exc.strerror or exc}")
            return []
        names = {entry.name for entry in entries}
        if not is_top and any(marker in names for marker in MARKER_FILES):
            return []  # a virtualenv or a cache that does not use a well-known name
        ignore = self.ignore
        if ignore is not None:
            del ignore.layers[depth:]
            if ".gitignore" in names:
                ignore.load(directory)
        layers = len(ignore.layers) if ignore is not None else 0
        filtered = bool(self.excludes) or layers > 0  # most folders have no pattern to test
        parent = os.path.basename(directory)
        subdirs: list[tuple[str, str, int]] = []
        for entry in entries:
            name = entry.name
            display = prefix + (name if name.isascii() else shown_name(name))
            try:
                if entry.is_symlink():
                    self.symlink(entry, display, parent)
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                self.error(display, "read", exc.strerror or str(exc))
                continue
            if is_dir:
                if name in SKIPPED_DIRS or name.endswith(".egg-info") or (
                        filtered and self.skipped(entry.path, name, display, True)):
                    continue
                subdirs.append((entry.path, display + "/", layers))
                continue
            kind = match_kind(name, False, parent)
            if kind is not None and not (filtered and self.skipped(entry.path, name, display, False)):
                self.add(entry.path, display, kind)
        subdirs.reverse()
        return subdirs

    def skipped(self, path: str, name: str, display: str, is_dir: bool) -> bool:
        if self.excludes and self.excludes.match(name, display, path):
            return True
        return self.ignore is not None and bool(self.ignore.layers) and self.ignore.ignored(path, is_dir)

    def symlink(self, entry: os.DirEntry, display: str, parent: str) -> None:
        """Links to regular files inside the scanned folder are read (through their resolved
        path, so the reader never follows a link); links to directories are not followed; loops,
        broken links, links out of the scanned folder and links to devices or pipes are errors."""
        self.reusable = False  # a link's target can change without any folder changing: walk again
        kind = file_kind(entry.name, parent=parent)
        try:
            mode = os.stat(entry.path).st_mode
        except OSError as exc:
            if self.skipped(entry.path, entry.name, display, False):
                return
            if exc.errno == errno.ELOOP:
                self.error(display, "symlink-loop", "symbolic link loop; not followed")
            elif kind is not None:
                self.error(display, "read", f"broken symbolic link: {exc.strerror or exc}")
            return
        if stat.S_ISDIR(mode) or kind is None or self.skipped(entry.path, entry.name, display, False):
            return
        target = os.path.realpath(entry.path)
        if not _inside(target, self.real_top):
            self.error(display, "read", "symbolic link to a file outside the scanned folder; not followed")
        elif not stat.S_ISREG(mode):
            self.error(display, "read", "symbolic link to a device, pipe or socket, not a regular file; not read")
        else:
            self.add(target, display, kind)

    @property
    def real_top(self) -> str:
        """The scanned folder as links resolve: what a link may point into."""
        if self._real_top is None:
            self._real_top = os.path.realpath(self.top)
        return self._real_top


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
