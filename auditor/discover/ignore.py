"""What a run leaves out: folders never scanned (version control, virtual environments, build
output, caches), what the .gitignore files ignore (read as git reads them: nested ones, those in
the folders above the scanned one up to the repository root, and .git/info/exclude; each file gets
one combined regex that rejects the common no-match case before pathspec's per-pattern check runs),
exclude globs, and, with --force-exclude, files named on the command line that the walk would have
left out."""

from __future__ import annotations

import fnmatch
import os
import re

from auditor.cache.folder import CACHE_DIR_NAME
from auditor.discover.files import stamp
from auditor.read.text import SourceError, read_regular_file

IGNORE_FILE_BYTES = 1024 * 1024  # a .gitignore larger than this is not read
_ANY_FOLDERS = "^(?:.+/)?"  # how pathspec starts the regex of a pattern without a slash


class _Layer:
    """One .gitignore file: its folder (with a trailing separator) and its compiled patterns."""

    __slots__ = ("base", "spec", "quick")

    def __init__(self, base: str, lines: list[str]) -> None:
        import pathspec

        self.base = base
        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.quick = _combined_regex(self.spec)

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a negation, None no pattern matched."""
        if not path.startswith(self.base):
            return None
        rel = path[len(self.base):].replace(os.sep, "/")
        if is_dir:
            rel += "/"
        if self.quick is not None and self.quick.match(rel) is None:
            return None
        return self.spec.check_file(rel).include


def _combined_regex(spec: object) -> re.Pattern[str] | None:
    """One regex matching whatever any pattern of the file matches (None when it cannot be built)."""
    # Most patterns are unanchored ("*.pyc", "build/") and start with the same "any folders"
    # prefix; factoring it out keeps the regex from backtracking once per pattern.
    floating, anchored = [], []
    for pattern in getattr(spec, "patterns", ()):
        regex = getattr(pattern, "regex", None)
        if getattr(pattern, "include", None) is None or regex is None:
            continue
        source = re.sub(r"\(\?P<\w+>", "(?:", regex.pattern)
        if source.startswith(_ANY_FOLDERS):
            floating.append(source[len(_ANY_FOLDERS):])
        else:
            anchored.append(source)
    branches = [f"(?:{'|'.join(anchored)})"] if anchored else []
    if floating:
        branches.append(f"{_ANY_FOLDERS}(?:{'|'.join(floating)})")
    try:
        return re.compile("|".join(branches) or r"(?!)")
    except re.error:
        return None


class GitIgnore:
    """The .gitignore files met on the way down, deepest last; the deepest decisive one wins."""

    def __init__(self, stamps: list[list] | None = None) -> None:
        self.layers: list[_Layer] = []
        self.stamps = stamps

    def load(self, directory: str, filename: str = ".gitignore") -> bool:
        if self.stamps is not None:
            stamp(self.stamps, os.path.join(directory, filename))
        try:  # as git: never through a link, never a FIFO; a capped size
            data = read_regular_file(os.path.join(directory, filename), IGNORE_FILE_BYTES)
            layer = _Layer(os.path.join(directory, ""), data.decode("utf-8", "replace").splitlines())
        except (SourceError, ValueError):  # an unreadable, special or malformed .gitignore ignores nothing
            return False
        self.layers.append(layer)
        return True

    def ignored(self, path: str, is_dir: bool) -> bool:
        for layer in reversed(self.layers):
            verdict = layer.decide(path, is_dir)
            if verdict is not None:
                return verdict
        return False


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
    CLI patterns are anchored by auditor.config.load.anchor) the absolute path; any other the display path."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.names = tuple(p for p in patterns if "/" not in p.strip("/"))
        self.absolute = tuple(p.rstrip("/") for p in patterns if "/" in p.strip("/") and os.path.isabs(p))
        self.paths = tuple(p.strip("/") for p in patterns if "/" in p.strip("/") and not os.path.isabs(p))

    def __bool__(self) -> bool:
        return bool(self.names or self.paths or self.absolute)

    def match(self, name: str, display: str, path: str = "") -> bool:
        return (any(fnmatch.fnmatchcase(name, p) for p in self.names)
                or any(fnmatch.fnmatchcase(display, p) for p in self.paths)
                or (bool(path) and any(fnmatch.fnmatchcase(path, p) for p in self.absolute)))


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
        if self.respect_gitignore and self._gitignore(folder).ignored(path, False):
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
