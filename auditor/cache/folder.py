"""The cache folder: where it is (`.lockin_auditor_cache/` at the project root, or --cache-dir)
and how it is handled.

It usually sits inside the scanned (untrusted) repository, so it is handled as hostile ground: it
is never used through a symbolic link, every file in it is opened relative to the folder's
descriptor without following links, created exclusively (a planted link cannot redirect a write)
and renamed into place; it is only used when this tool created it (our CACHEDIR.TAG is in it) or
it is empty; only the catch-all `.gitignore` of a folder this tool created is written; pruning
removes only `results-*.bin` regular files and the `.tmp-*.bin` ones a killed save left behind. A `--cache-dir` that holds anything else is refused
(exit 2)."""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager

CACHE_DIR_NAME = ".lockin_auditor_cache"
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by lockin-auditor.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
MAX_CACHE_FILES = 16  # settings variants kept side by side; the least recently used go first


def project_root(scan_root: str) -> str:
    """Nearest ancestor of the scanned root holding .git or pyproject.toml, else the root itself."""
    here = os.path.abspath(scan_root)
    while True:
        if os.path.exists(os.path.join(here, ".git")) or os.path.isfile(os.path.join(here, "pyproject.toml")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.abspath(scan_root)
        here = parent


def cache_location(scan_root: str, cache_dir: str | None) -> tuple[str, str]:
    """(project root, cache folder) for a scan of `scan_root`."""
    project = project_root(scan_root)
    return project, os.path.abspath(cache_dir) if cache_dir else os.path.join(project, CACHE_DIR_NAME)


class CacheDirRefused(Exception):
    """--cache-dir names a folder audit cannot take over (a link, or other files in it)."""


_GITIGNORE = "# Created by lockin-auditor.\n*\n"
_RESULTS = re.compile(r"results-[0-9a-f]{24}\.bin\Z")
_TEMP = re.compile(r"\.tmp-[0-9a-f]{16}\.bin\Z")  # what write_file creates before its rename
STALE_TEMP_NS = 3600 * 10**9
_OPEN_FLAGS = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_MAX_CACHE_BYTES = 2 * 1024**3


@contextmanager
def open_folder(directory: str) -> Iterator[int]:
    """The cache folder's descriptor; a symbolic link there fails (ELOOP or ENOTDIR)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _OPEN_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def read_file(folder: int, name: str, limit: int = _MAX_CACHE_BYTES) -> tuple[bytes, os.stat_result]:
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _OPEN_FLAGS, dir_fd=folder)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return handle.read(limit), info


def write_file(folder: int, name: str, data: bytes) -> None:
    """Write `name` atomically: a fresh file created exclusively (never through a planted link),
    then renamed over the old one (a rename replaces a link, it does not follow it)."""
    temp = f".tmp-{os.urandom(8).hex()}.bin"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o644, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        _remove(folder, temp)
        raise


def _create_once(folder: int, name: str, content: str) -> None:
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o644, dir_fd=folder)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(content)


def prepare_directory(directory: str) -> None:
    """Create the cache folder when missing, with its CACHEDIR.TAG and a .gitignore that ignores
    everything (only in a folder created here); an empty folder is adopted with a tag only."""
    created = False
    if not os.path.lexists(directory):
        os.makedirs(os.path.dirname(os.path.abspath(directory)), exist_ok=True)
        try:
            os.mkdir(directory)
            created = True
        except FileExistsError:
            pass
    with open_folder(directory) as folder:
        _create_once(folder, "CACHEDIR.TAG", CACHEDIR_TAG)
        if created:
            _create_once(folder, ".gitignore", _GITIGNORE)


def read_in_folder(directory: str, name: str, limit: int = 1024 * 1024) -> bytes | None:
    """A small file this tool keeps in the cache folder (never through a link, never a FIFO), or
    None when missing or unusable."""
    try:
        with open_folder(directory) as folder:
            return read_file(folder, name, limit)[0]
    except OSError:
        return None


def write_in_folder(directory: str, name: str, data: bytes) -> bool:
    """Write a small file into the cache folder the way results are written; False when the
    folder is not ours or cannot be written (it only costs the next run time)."""
    if folder_problem(directory) is not None:
        return False
    try:
        prepare_directory(directory)
        with open_folder(directory) as folder:
            write_file(folder, name, data)
    except OSError:
        return False
    return True


def folder_problem(directory: str) -> str | None:
    """Why `directory` cannot be the cache folder, or None: missing, empty or tagged by us is fine."""
    try:
        with open_folder(directory) as folder:
            names = os.listdir(folder)
            if not names:
                return None
            try:
                tag, _ = read_file(folder, "CACHEDIR.TAG", len(CACHEDIR_TAG) + 1)
            except OSError:
                tag = b""
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(directory):
            return "it is a symbolic link"
        if exc.errno == errno.ENOTDIR and os.path.lexists(directory):
            return "it is not a folder"
        return None  # unreachable or unreadable: saving will say so
    if tag.decode("utf-8", "replace") == CACHEDIR_TAG:
        return None
    return "it holds other files (no lockin-auditor CACHEDIR.TAG)"


def _remove(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass


def prune(folder: int) -> None:
    """Keep the most recently written result files only (one per settings variant), and drop the
    temporary files of saves that never finished (a run killed while saving left one of 20 MB for
    good: issue 20, D26) once they are older than any save takes; only regular files named like
    the ones this module writes are ever removed."""
    files = []
    stale_before = time.time_ns() - STALE_TEMP_NS
    with os.scandir(folder) as listing:
        for entry in listing:
            if not entry.is_file(follow_symlinks=False):
                continue
            if _RESULTS.match(entry.name):
                files.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
            elif _TEMP.match(entry.name) and entry.stat(follow_symlinks=False).st_mtime_ns < stale_before:
                _remove(folder, entry.name)  # another run's save in progress is younger than this
    if len(files) <= MAX_CACHE_FILES:
        return
    files.sort(reverse=True)
    for _, name in files[MAX_CACHE_FILES:]:
        _remove(folder, name)
