"""`--write-tests DIR`: the parity test and the benchmark written into DIR, never over a file
audit did not write or one edited since, never through a symbolic link."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from auditor.plan.benchmark import benchmark_filename, render_benchmark
from auditor.plan.devices import NVIDIA, TargetDevice
from auditor.plan.generated import ownership
from auditor.plan.parity import parity_filename, render_parity_test

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_MAX_BYTES = 1024 * 1024  # a generated file is ~20 kB: anything bigger is not ours


class WriteRefused(Exception):
    """A generated file cannot be written; the message says why and what to do (nothing was
    written: every file is checked before the first is)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def write_tests(directory: str | os.PathLike[str], target: str, *, project: str,
                device: str | TargetDevice | None = None, entry: str | None = None,
                reference: str | TargetDevice = NVIDIA,
                devices: Mapping[str, TargetDevice] | None = None) -> list[Path]:
    """Write `test_parity_T.py` and `bench_T.py` into `directory` (created when missing) and
    return their paths. Raises WriteRefused, writing nothing, when the folder or a file is a
    link, or a file exists that audit did not write or that was edited since; raises
    ValueError for a bad target, device or entry. Writing the same again changes nothing."""
    options = {"project": project, "device": device, "entry": entry, "reference": reference,
               "devices": devices}
    files = {
        parity_filename(target): render_parity_test(target, **options),
        benchmark_filename(target): render_benchmark(target, **options),
    }
    folder = _prepare(Path(directory))
    existing = {name: _check_replaceable(folder / name) for name in files}
    for name, text in files.items():
        if existing[name] != text:  # the same file again is left as it is (mtime too)
            _write(folder / name, text)
    return [folder / name for name in files]


def _prepare(folder: Path) -> Path:
    if folder.is_symlink():
        raise WriteRefused(folder, "the folder is a symbolic link (audit never writes through links): "
                           "name the real folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteRefused(folder, "exists and is not a folder") from None
    except OSError as exc:
        raise WriteRefused(folder, f"cannot create the folder ({exc.strerror or exc})") from None
    return folder


def _check_replaceable(path: Path) -> str | None:
    """The text of the file audit may replace at `path` (None: there is none yet)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise WriteRefused(path, "is a symbolic link (audit never writes through links): remove it")
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(path, "exists and is not a regular file")
    text = _read(path)
    verdict = ownership(text)
    if verdict == "foreign":
        raise WriteRefused(path, "exists and was not written by audit: move it or name another folder")
    if verdict == "edited":
        raise WriteRefused(path, "was edited since audit wrote it: keep your copy under another "
                           "name, or delete it to regenerate")
    return text


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise WriteRefused(path, f"cannot read it ({exc.strerror or exc})") from None
    if len(data) > _MAX_BYTES:
        return ""  # too big to be ours: foreign
    return data.decode("utf-8", errors="replace")


def _write(path: Path, text: str) -> None:
    """A fresh file created exclusively next to `path` (never through a planted link), then
    renamed over it: a rename replaces a link, it never follows one."""
    temp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temp, path)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise WriteRefused(path, f"cannot write it ({exc.strerror or exc})") from None
