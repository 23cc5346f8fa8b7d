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
that reject the common no-match case before any pattern is tried (auditor/discover/patterns.py,
which matches in bounded time whatever the patterns)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from auditor.discover.files import (
    Discovery,
    SourceFile,
    display_path,
    explicit_kind,
    file_kind,
    shown_name,
    stamp,
    why_not_read,
)
from auditor.discover.ignore import SKIPPED_DIRS, Excludes, ExplicitFiles, GitIgnore, load_parents, repository_root
from auditor.discover.kinds import match as match_kind
from auditor.model import FileError
from auditor.paths import inside

# A directory holding one of these files is a virtualenv or a tool cache (CACHEDIR.TAG is the
# cache-directory standard that pip, cargo and others follow).
MARKER_FILES = ("pyvenv.cfg", "CACHEDIR.TAG")


def discover(paths: list[str], root: str, respect_gitignore: bool = True,
             excludes: tuple[str, ...] = (), stamp: bool = False, force_exclude: bool = False) -> Discovery:
    """Files under `paths` (files or directories), sorted by display path (relative to `root`).
    With `stamp`, a walk of directories also records what it depended on (`Discovery.stamps`).
    Paths named explicitly are read whatever their name says or a .gitignore above them ignores
    (as ruff and ripgrep do: the user asked for them), unless `force_exclude` applies the excludes
    and .gitignore to them too (pre-commit names every file it hands over)."""
    found = Discovery()
    seen: set[str] = set()
    stamps: list[list] | None = [] if stamp else None

    def add(path: str, display: str, kind: str) -> None:
        if display not in seen:
            seen.add(display)
            found.files.append(SourceFile(path, display, kind))

    root = os.path.abspath(root)
    explicit = ExplicitFiles(tuple(excludes), respect_gitignore) if force_exclude else None
    for given in paths:
        if os.path.isdir(given):
            walk = _Walk(root, found, add, respect_gitignore, Excludes(tuple(excludes)), stamps, force_exclude)
            walk.run(os.path.abspath(given))
            stamps = walk.stamps if walk.reusable else None
        else:
            stamps = None  # explicit files are cheap to find again
            reason = explicit.excluded(given) if explicit is not None else None
            kind = None if reason else explicit_kind(given)
            if kind is None:
                found.skipped.append((given, reason or why_not_read(given)))
                continue
            # A link given by name is followed here, the one time: the reader never follows one.
            add(os.path.realpath(given) if os.path.islink(given) else given, display_path(given, root), kind)
    found.files.sort(key=lambda f: f.display)
    found.errors = sorted(set(found.errors))
    found.stamps = stamps if not found.errors else None
    return found


class _Walk:
    """One directory tree: an explicit stack, so deep trees never hit the recursion limit."""

    def __init__(self, root: str, found: Discovery, add: Callable[[str, str, str], None],
                 respect_gitignore: bool, excludes: Excludes, stamps: list[list] | None = None,
                 force_exclude: bool = False) -> None:
        self.root = root
        self.found = found
        self.add = add
        self.ignore = GitIgnore(stamps) if respect_gitignore else None
        self.excludes = excludes
        self.stamps = stamps  # recorded when the caller may reuse this walk
        self.reusable = True  # False once the walk met something its stamps cannot cover
        self.force_exclude = force_exclude  # a named folder ignored from above is then left out
        self.top = root  # the folder this walk scans (set by run)
        self._real_top: str | None = None

    def error(self, display: str, kind: str, message: str) -> None:
        self.found.errors.append(FileError(display or ".", kind, message))

    def run(self, top: str) -> None:
        self.top, self._real_top = top, None
        prefix = display_path(top, self.root)
        prefix = "" if prefix == "." else prefix + "/"
        if self.ignore is not None:
            load_parents(self.ignore, top, self.stamps)
            repo = repository_root(top)
            if (self.force_exclude and repo is not None and self.ignore.layers
                    and self.ignore.ignored_within(top, True, repo)):
                return  # the folder named is itself ignored from above, and the caller said to honour that
        # (directory, its display prefix, .gitignore layers that apply above it)
        stack: list[tuple[str, str, int]] = [(top, prefix, len(self.ignore.layers) if self.ignore else 0)]
        while stack:
            directory, prefix, depth = stack.pop()
            stack.extend(self.visit(directory, prefix, depth, is_top=directory == top))

    def visit(self, directory: str, prefix: str, depth: int, is_top: bool) -> list[tuple[str, str, int]]:
        """Add this folder's files; return its subfolders still to walk."""
        if self.stamps is not None:  # before listing: a change after it shows as a newer mtime
            stamp(self.stamps, directory, directory=True)
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
        parent = prefix[:-1]  # the folder's path below the root: kinds look for config folders on it
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
        if not inside(target, self.real_top):
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
