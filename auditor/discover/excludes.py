"""What a run leaves out besides .gitignore: folders never scanned (version control, virtual
environments, build output, caches), exclude globs, and, with --force-exclude, files named on the
command line that the walk would have left out."""

from __future__ import annotations

import fnmatch
import os

from auditor.cache.folder import CACHE_DIR_NAME
from auditor.discover.gitignore import GitIgnore, load_parents, repository_root

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
