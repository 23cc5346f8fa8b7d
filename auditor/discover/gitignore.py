""".gitignore files, as git reads them: nested ones, those in the folders above the scanned one up
to the repository root, and .git/info/exclude. Each file gets one combined regex that rejects
the common no-match case before pathspec's per-pattern check runs."""

from __future__ import annotations

import os
import re

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
