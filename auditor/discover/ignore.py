"""What a run leaves out: folders never scanned (version control, virtual environments, build
output, caches), what the .gitignore files ignore (read as git reads them: nested ones, those in
the folders above the scanned one up to the repository root, and .git/info/exclude; matched in
bounded time whatever the patterns by auditor/discover/patterns.py), exclude globs (one compiled
regex per group), and, with --force-exclude, files named on the command line that the walk would
have left out."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable

from auditor.cache.folder import CACHE_DIR_NAME
from auditor.discover.files import stamp
from auditor.discover.patterns import Layer
from auditor.read.text import SourceError, read_regular_file, split_lines

IGNORE_FILE_BYTES = 1024 * 1024  # a .gitignore larger than this is not read


class GitIgnore:
    """The .gitignore files met on the way down, deepest last; the deepest decisive one wins."""

    def __init__(self, stamps: list[list] | None = None) -> None:
        self.layers: list[Layer] = []
        self.stamps = stamps

    def load(self, directory: str, filename: str = ".gitignore") -> bool:
        if self.stamps is not None:
            stamp(self.stamps, os.path.join(directory, filename))
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


def load_parents(ignore: GitIgnore, top: str, stamps: list[list] | None = None) -> None:
    """Git applies .git/info/exclude and the .gitignore files above `top` up to the repository root."""
    repo = repository_root(top)
    if stamps is not None:  # a .git or .gitignore appearing above `top` changes one of these folders
        here = top
        while True:
            parent = os.path.dirname(here)
            if parent == here or here == repo:
                break
            here = parent
            stamp(stamps, here, directory=True)
        if repo is not None:  # not .git itself: every git command touches it
            stamp(stamps, os.path.join(repo, ".git", "info"), directory=True)
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


SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__", "node_modules",
    "site-packages", "dist-packages", "build", "dist", "_build", "buck-out", ".eggs", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "__pypackages__", ".direnv", CACHE_DIR_NAME,
})


class Excludes:
    """Exclude globs: one without a slash matches a file or folder name; an absolute one (config and
    CLI patterns are anchored by auditor.config.load.anchor) the absolute path; any other the display path.
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


def _globs(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching what fnmatch.fnmatchcase matches with any of `patterns` (None: none)."""
    sources = [fnmatch.translate(pattern) for pattern in patterns]
    return re.compile("|".join(f"(?:{source})" for source in sources)) if sources else None


class ExplicitFiles:
    """--force-exclude: a file named explicitly is left out when the walk would leave it out: a
    folder above it (up to the repository root) is a skipped or excluded one, the file matches an
    exclude, or .gitignore ignores it."""

    def __init__(self, excludes: tuple[str, ...], respect_gitignore: bool) -> None:
        self.excludes = Excludes(excludes)
        self.respect_gitignore = respect_gitignore
        self.ignores: dict[str, GitIgnore] = {}  # per folder: the .gitignore files that apply in it

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

    def _gitignore(self, folder: str) -> GitIgnore:
        ignore = self.ignores.get(folder)
        if ignore is None:
            ignore = self.ignores[folder] = GitIgnore()
            load_parents(ignore, folder)
            if os.path.isfile(os.path.join(folder, ".gitignore")):
                ignore.load(folder)
        return ignore
