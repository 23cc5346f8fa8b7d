"""Writing files on hostile ground: every write this tool makes outside its cache folder goes here.

The working directory and the scanned folder may be an untrusted checkout, which can hold links
(`audit.sarif -> ~/.bashrc`, `out -> /etc`) and be changed while a run goes on. So:

- inside a guarded folder (the scanned folder, the working directory) a path is opened one
  folder at a time by descriptor, never following a link: a link anywhere below the guarded
  folder is refused, and a folder swapped for a link after it was opened is not followed (D4, D20);
- a regular file is replaced atomically: a temporary file created exclusively beside it, given
  its mode (and owner, when the process may), then renamed over it; a half-written file never
  shows and a failure leaves the old one;
- a non-regular file is never replaced (D23): a device or pipe outside the guarded folders (the
  user's `/dev/stdout`, `/dev/null`, `/dev/full`) is written in place, one inside them is refused,
  a folder is refused;
- outside the guarded folders, the user's own links are followed (`-o /tmp/link` is theirs).

`write_requested` serves what the user names (-o, --write-baseline); `TreeFile` the files inside
the scanned tree that --fix and --add-noqa rewrite (read and written through one folder
descriptor, never when read-only or when the owner would change: D30). The cache folder has its
own, stricter rules (auditor/cache.py)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import BinaryIO

from auditor.config import ConfigError

_DIRECTORY = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW


class WriteRefused(ConfigError):
    """Nothing was written; the message (one line) says why (as a usage error: exit 2)."""


def _parts_below(path: str, folder: str) -> list[str] | None:
    """The components of `path` below `folder` (both absolute and normalised), or None."""
    if path == folder:
        return []
    prefix = folder.rstrip(os.sep) + os.sep
    return path[len(prefix):].split(os.sep) if path.startswith(prefix) else None


def _guard_for(path: str, guarded: Sequence[str]) -> tuple[str, list[str]] | None:
    """The outermost guarded folder holding `path`, and the components below it."""
    best: tuple[str, list[str]] | None = None
    for folder in guarded:
        for form in {os.path.abspath(folder), os.path.realpath(folder)}:
            parts = _parts_below(path, form)
            if parts is not None and (best is None or len(parts) > len(best[1])):
                best = (form, parts)
    return best


def open_folder(folder: str, parts: Sequence[str], shown: str) -> int:
    """A descriptor of folder/parts..., each component opened without following a link."""
    try:
        fd = os.open(folder, _DIRECTORY)
    except OSError as exc:
        missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
        raise WriteRefused(f"cannot write {shown}: " + (f"folder {folder} does not exist" if missing
                                                         else f"{folder}: {exc.strerror or exc}")) from None
    walked = folder
    try:
        for part in parts:
            walked = os.path.join(walked, part)
            try:
                next_fd = os.open(part, _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(walked):
                    raise WriteRefused(f"cannot write {shown}: {walked} is a symbolic link; not written through "
                                       "it (remove it or choose another path)") from None
                if exc.errno == errno.ENOENT:
                    raise WriteRefused(f"cannot write {shown}: folder {walked} does not exist") from None
                raise WriteRefused(f"cannot write {shown}: {walked}: {exc.strerror or exc}") from None
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def requested_output(path: str, guarded: Sequence[str]) -> Iterator[BinaryIO]:
    """A binary stream to `path`, a file the user named; written as the module says."""
    shown = str(path)
    if not shown:
        raise WriteRefused("cannot write '': give a file name")
    lexical = os.path.abspath(shown)
    place = _guard_for(lexical, guarded)
    if place is None:
        try:
            info = os.stat(lexical)
        except OSError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
            with _in_place(lexical, shown) as stream:  # the user's device or pipe (/dev/stdout)
                yield stream
            return
        real = os.path.realpath(lexical)  # the user's own links, outside the guarded folders, are followed
        place = _guard_for(real, guarded) or (os.path.dirname(real), [os.path.basename(real)])
    folder, parts = place
    if not parts or not parts[-1]:
        raise WriteRefused(f"cannot write {shown}: it is a folder")
    fd = open_folder(folder, parts[:-1], shown)
    try:
        with _replacing(fd, parts[-1], shown) as stream:
            yield stream
    finally:
        os.close(fd)


def write_requested(path: str, data: bytes, guarded: Sequence[str]) -> None:
    with requested_output(path, guarded) as stream:
        stream.write(data)


@contextmanager
def _in_place(path: str, shown: str) -> Iterator[BinaryIO]:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise WriteRefused(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
    except OSError as exc:
        raise WriteRefused(f"cannot write {shown}: {exc.strerror or exc}") from None


def _existing(fd: int, name: str, shown: str) -> os.stat_result | None:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteRefused(f"cannot write {shown}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise WriteRefused(f"cannot write {shown}: it is a symbolic link; not written through it "
                           "(remove it or choose another path)")
    if stat.S_ISDIR(info.st_mode):
        raise WriteRefused(f"cannot write {shown}: it is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"cannot write {shown}: it is not a regular file (a device, pipe or socket); "
                           "not replaced")
    return info


@contextmanager
def _replacing(fd: int, name: str, shown: str, info: os.stat_result | None = None,
               keep_owner: bool = False) -> Iterator[BinaryIO]:
    """A temporary file beside `name` in folder `fd`, renamed over it when the block succeeds."""
    if info is None:
        info = _existing(fd, name, shown)
    temp = f".{name[:60]}.{os.urandom(6).hex()}.lockin-tmp"
    try:
        temp_fd = os.open(temp, _TEMP_FLAGS, 0o600 if info is not None else 0o666, dir_fd=fd)
    except OSError as exc:
        raise WriteRefused(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(temp_fd, "wb") as stream:
            yield stream
            stream.flush()
            if info is not None:
                os.fchmod(stream.fileno(), stat.S_IMODE(info.st_mode))
                if (info.st_uid, info.st_gid) != (os.fstat(stream.fileno()).st_uid, os.fstat(stream.fileno()).st_gid):
                    try:
                        os.fchown(stream.fileno(), info.st_uid, info.st_gid)
                    except PermissionError:
                        if keep_owner:
                            raise WriteRefused(f"not written: {shown} belongs to another user") from None
        os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException as exc:
        try:
            os.unlink(temp, dir_fd=fd)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteRefused(f"cannot write {shown}: {exc.strerror or exc}") from None
        raise


class TreeFile:
    """A regular file inside the scanned tree, read and rewritten through one descriptor of its
    folder, opened component by component from the tree's top without following links."""

    def __init__(self, path: str, root: str) -> None:
        self.shown = path
        lexical = os.path.abspath(path)
        place = _guard_for(lexical, [root])
        if place is None or not place[1]:
            raise WriteRefused("the file is outside the scanned folder")
        folder, parts = place
        self.name = parts[-1]
        try:
            self.fd = open_folder(folder, parts[:-1], path)
        except WriteRefused as exc:
            raise WriteRefused(str(exc).replace(f"cannot write {path}: ", "")) from None

    def __enter__(self) -> TreeFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def stat(self) -> os.stat_result:
        info = os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise WriteRefused("the file is a symlink (audit never writes through links)")
        if not stat.S_ISREG(info.st_mode):
            raise WriteRefused("not a regular file")
        return info

    def read(self, max_bytes: int) -> bytes:
        data = self._read_upto(max_bytes + 1)
        if len(data) > max_bytes:
            raise WriteRefused("the file is too large")
        return data

    def _read_upto(self, limit: int) -> bytes:
        fd = os.open(self.name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise WriteRefused("not a regular file")
            return handle.read(limit)

    def create(self, data: bytes) -> None:
        """Create the file with `data`; WriteRefused when anything exists at its name (a file, a
        link, a folder): written to a temporary file, then linked to the name, which fails rather
        than replace what appeared meanwhile."""
        temp = f".{self.name[:60]}.{os.urandom(6).hex()}.lockin-tmp"
        try:
            temp_fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=self.fd)
        except OSError as exc:
            raise WriteRefused(f"cannot write {self.shown}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(temp_fd, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            try:
                os.link(temp, self.name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
            except FileExistsError:
                raise WriteRefused(f"{self.shown} exists (audit never writes over a file)") from None
            except OSError as exc:
                raise WriteRefused(f"cannot write {self.shown}: {exc.strerror or exc}") from None
        finally:
            try:
                os.unlink(temp, dir_fd=self.fd)
            except OSError:
                pass

    def replace(self, data: bytes, expected: bytes) -> None:
        """Rewrite the file with `data` if it still holds `expected`; WriteRefused says why not."""
        try:
            info = self.stat()
        except OSError as exc:
            raise WriteRefused(f"cannot read it again ({exc.strerror or exc})") from None
        if not info.st_mode & stat.S_IWUSR:
            raise WriteRefused("the file is read-only; not rewritten")
        try:
            current = self._read_upto(len(expected) + 1)
        except OSError as exc:
            raise WriteRefused(f"cannot read it again ({exc.strerror or exc})") from None
        if current != expected:
            raise WriteRefused("the file changed on disk since it was read; run audit again")
        with _replacing(self.fd, self.name, self.shown, info, keep_owner=True) as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
            now = os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
            if (now.st_size, now.st_mtime_ns, now.st_ino) != (info.st_size, info.st_mtime_ns, info.st_ino):
                raise WriteRefused("the file changed on disk while it was being fixed; run audit again")
