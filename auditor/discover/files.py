"""What discovery finds: the files to read (`SourceFile`, with the kind each is read as) and what
the walk depended on; the kind of a file from its name (auditor.discover.kinds), or of a file
named on the command line from its shebang; the path every report shows."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from auditor.discover.kinds import match as match_kind
from auditor.model import FileError


@dataclass(frozen=True)
class SourceFile:
    path: str  # what to open
    display: str  # POSIX path relative to the scanned root, as reported
    kind: str  # a name from auditor.discover.kinds.KINDS


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
    """The kind of file (auditor.discover.kinds) `path` is, from its name; None when audit does not read it.

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


def stamp(stamps: list[list], path: str, directory: bool = False) -> None:
    """Record a folder's mtime or a file's size and mtime; a missing path records nothing (the
    stamp of the folder holding it covers its appearance)."""
    try:
        info = os.stat(path)
    except OSError:
        return
    stamps.append([path, -1 if directory else info.st_size, info.st_mtime_ns])


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


def why_not_read(path: str) -> str:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return "not a kind of file audit reads (Python, requirements, pyproject.toml, setup.cfg, CUDA)"
