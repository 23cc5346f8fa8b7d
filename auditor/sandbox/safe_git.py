"""Running git on an untrusted checkout without letting it run anything the checkout configures.

A repository's configuration can make git start programs: clean/smudge/process filters, diff
drivers (textconv, command), diff.external, core.fsmonitor, core.pager and pager.*, hooks,
core.sshCommand for a partial clone's lazy fetch, includes of other files, a submodule's own
configuration. Emptying them by name lost: `-c filter.a=b.clean=` is split at the first `=`, and a
submodule's filters were never listed (issue 20, D2 and D3). So git never reads the checkout's
configuration at all. It runs against a stand-in repository in a private temporary folder:

- its `config` is written here: no filter, driver, pager, hook folder, fsmonitor, remote or
  include; submodules ignored; no protocol allowed;
- its objects are the checkout's (`objects/info/alternates`), its refs, HEAD, shallow list and
  index are copies, read as data without following links; `info/exclude` is copied too, while
  the checkout's `hooks/`, `info/attributes` and `config` are never looked at;
- the environment has no GIT_* variable of ours and neither system nor global configuration
  (a runner's global git-lfs filter would otherwise run on every file of a pull request), no
  pager, no terminal prompt, no optional locks; every diff is --no-ext-diff --no-textconv
  --ignore-submodules=all; stdin is closed.

The working tree's `.gitattributes` are still read (git 2.39 cannot switch them off) but can only
name drivers, and none is configured. A `.git` that is a link, a `.git` file or `commondir`
pointing outside the working tree, and objects borrowed from outside it (alternates) are refused:
git would read another repository (D24). A reftable repository is refused (its refs cannot be
copied as files)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from auditor.config import ConfigError
from auditor.paths import inside
from auditor.read.text import SourceError, read_regular_file

GIT_TIMEOUT = 120
MAX_SMALL_BYTES = 64 * 1024  # HEAD, a loose ref, commondir, a `.git` file, alternates
MAX_DATA_BYTES = 1024 * 1024 * 1024  # the index, packed-refs, shallow, info/exclude
MAX_REF_FILES = 1_000_000
_NOFOLLOW = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_DIRECTORY", 0)

STAND_IN_CONFIG = """\
[core]
\trepositoryformatversion = {version}
\tbare = false
\tfsmonitor = false
\thooksPath = /dev/null
\tattributesFile = /dev/null
\texcludesFile = /dev/null
\tquotePath = false
\tuntrackedCache = false
\tsplitIndex = false
\tpager = cat
[diff]
\tignoreSubmodules = all
\trenames = true
[status]
\tsubmoduleSummary = false
[submodule]
\trecurse = false
[protocol]
\tallow = never
[fetch]
\trecurseSubmodules = false
{extensions}"""


class GitRefused(ConfigError):
    """The repository cannot be read safely (or at all); the message says why."""


@dataclass(frozen=True)
class Repository:
    top: str  # the working tree's top folder
    git_dir: str  # its .git folder (or what a `.git` file inside the tree names)
    common_dir: str  # where objects and refs live (git_dir, or its `commondir`)


def _inside(path: str, folder: str) -> bool:
    return inside(os.path.realpath(path), os.path.realpath(folder))


def _read_small(path: str, limit: int = MAX_SMALL_BYTES) -> bytes:
    try:
        return read_regular_file(path, limit)
    except SourceError as exc:
        raise GitRefused(f"--diff-base: {path}: {exc.message}") from None


def find_repository(folder: str) -> Repository:
    """The repository holding `folder`: the nearest `.git` above it, checked as described above."""
    here = os.path.abspath(folder if os.path.isdir(folder) else os.path.dirname(folder) or ".")
    while True:
        dot_git = os.path.join(here, ".git")
        try:
            info = os.lstat(dot_git)
        except OSError:
            info = None
        if info is not None:
            return _repository(here, dot_git, info)
        parent = os.path.dirname(here)
        if parent == here:
            raise GitRefused("--diff-base: not inside a git repository")
        here = parent


def _repository(top: str, dot_git: str, info: os.stat_result) -> Repository:
    if stat.S_ISLNK(info.st_mode):
        raise GitRefused(f"--diff-base: {dot_git} is a symbolic link; not followed")
    if stat.S_ISDIR(info.st_mode):
        git_dir = dot_git
    else:
        text = _read_small(dot_git).decode("utf-8", "surrogateescape").strip()
        if not text.startswith("gitdir:"):
            raise GitRefused(f"--diff-base: {dot_git} is neither a folder nor a `gitdir:` file")
        git_dir = os.path.join(top, text[len("gitdir:"):].strip())
        if not _inside(git_dir, top):
            raise GitRefused(f"--diff-base: {dot_git} points to a repository outside {top} "
                             f"({git_dir}); not read")
    common_dir = git_dir
    commondir = os.path.join(git_dir, "commondir")
    if os.path.lexists(commondir):
        named = _read_small(commondir).decode("utf-8", "surrogateescape").strip()
        common_dir = os.path.join(git_dir, named)
        if not _inside(common_dir, top):
            raise GitRefused(f"--diff-base: {top} is a linked worktree whose repository is outside it "
                             f"({os.path.normpath(common_dir)}); not read (run it in the main checkout)")
    for name in ("objects", "refs"):
        if not os.path.isdir(os.path.join(common_dir, name)) or not _inside(os.path.join(common_dir, name), top):
            raise GitRefused(f"--diff-base: {common_dir} has no usable {name} folder inside {top}")
    if os.path.lexists(os.path.join(common_dir, "reftable")):
        raise GitRefused("--diff-base: this repository keeps its refs in the reftable format; not supported")
    _check_alternates(os.path.join(common_dir, "objects"), top)
    return Repository(top, git_dir, common_dir)


def _check_alternates(objects: str, top: str) -> None:
    path = os.path.join(objects, "info", "alternates")
    if not os.path.lexists(path):
        return
    for line in _read_small(path).decode("utf-8", "surrogateescape").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and not _inside(os.path.join(objects, line), top):
            raise GitRefused(f"--diff-base: the repository borrows objects from outside {top} "
                             f"({line}, objects/info/alternates); not read")


def _object_format(common_dir: str) -> str:
    """sha1 or sha256, read from the configuration as data (git itself never reads it)."""
    path = os.path.join(common_dir, "config")
    try:
        text = _read_small(path, MAX_DATA_BYTES).decode("utf-8", "replace")
    except GitRefused:
        return "sha1"
    found = re.search(r"(?im)^\s*objectformat\s*=\s*\"?(\w+)", text)
    return found.group(1).lower() if found else "sha1"


def _copy_file(source: str, target: str, limit: int = MAX_DATA_BYTES) -> bool:
    """Copy a regular file (never through a link, never a FIFO); False when it is missing."""
    try:
        fd = os.open(source, _NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise GitRefused(f"--diff-base: {source} is a symbolic link; not followed") from None
        raise GitRefused(f"--diff-base: cannot read {source}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GitRefused(f"--diff-base: {source} is not a regular file; not read")
        if info.st_size > limit:
            raise GitRefused(f"--diff-base: {source} is over {limit // 2**20} MB; not read")
        with open(target, "wb") as out:
            shutil.copyfileobj(handle, out, 1 << 20)
    return True


def _copy_refs(source: str, target: str) -> None:
    """The loose refs under `source` (a tree of small files), without following links."""
    copied = 0
    stack = [""]
    while stack:
        relative = stack.pop()
        folder = os.path.join(source, relative)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        os.makedirs(os.path.join(target, relative), exist_ok=True)
        for entry in entries:
            name = os.path.join(relative, entry.name)
            if entry.is_dir(follow_symlinks=False):
                stack.append(name)
            elif entry.is_file(follow_symlinks=False):
                copied += 1
                if copied > MAX_REF_FILES:
                    raise GitRefused(f"--diff-base: over {MAX_REF_FILES:,} loose refs; not read")
                _copy_file(entry.path, os.path.join(target, name), MAX_SMALL_BYTES)


def _build_stand_in(repo: Repository, folder: str) -> None:
    objects = os.path.realpath(os.path.join(repo.common_dir, "objects"))
    fmt = _object_format(repo.common_dir)
    if fmt not in ("sha1", "sha256"):
        raise GitRefused(f"--diff-base: unknown object format {fmt!r} in this repository")
    extensions = "[extensions]\n\tobjectFormat = sha256\n" if fmt == "sha256" else ""
    with open(os.path.join(folder, "config"), "w", encoding="utf-8") as config:
        config.write(STAND_IN_CONFIG.format(version=1 if extensions else 0, extensions=extensions))
    os.makedirs(os.path.join(folder, "objects", "info"))
    os.makedirs(os.path.join(folder, "info"))
    with open(os.path.join(folder, "objects", "info", "alternates"), "w", encoding="utf-8") as alternates:
        alternates.write(objects + "\n")
    if not _copy_file(os.path.join(repo.git_dir, "HEAD"), os.path.join(folder, "HEAD"), MAX_SMALL_BYTES):
        raise GitRefused(f"--diff-base: {repo.git_dir} has no HEAD")
    _copy_refs(os.path.join(repo.common_dir, "refs"), os.path.join(folder, "refs"))
    for name in ("packed-refs", "shallow"):
        _copy_file(os.path.join(repo.common_dir, name), os.path.join(folder, name))
    _copy_file(os.path.join(repo.common_dir, "info", "exclude"), os.path.join(folder, "info", "exclude"))
    _copy_file(os.path.join(repo.git_dir, "index"), os.path.join(folder, "index"))
    with os.scandir(repo.git_dir) as listing:  # a split index keeps its shared part beside it
        for entry in listing:
            if entry.name.startswith("sharedindex.") and entry.is_file(follow_symlinks=False):
                _copy_file(entry.path, os.path.join(folder, entry.name))


def _environment(stand_in: str, top: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_DIR": stand_in, "GIT_WORK_TREE": top, "GIT_INDEX_FILE": os.path.join(stand_in, "index"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_SYSTEM": os.devnull, "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat", "GIT_PROTOCOL_FROM_USER": "0",
        "LC_ALL": "C",
    })
    return env


class SafeGit:
    """git commands over one repository's stand-in (see the module's docstring)."""

    def __init__(self, repo: Repository, stand_in: str) -> None:
        self.repo = repo
        self.env = _environment(stand_in, repo.top)

    def run(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
        try:
            proc = subprocess.run(["git", "--no-pager", *args], cwd=self.repo.top, env=self.env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=GIT_TIMEOUT)
        except FileNotFoundError:
            raise ConfigError("--diff-base needs git, which is not installed") from None
        except subprocess.TimeoutExpired:
            raise ConfigError(f"--diff-base: git {args[0]} took over {GIT_TIMEOUT} s") from None
        if check and proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ConfigError(f"--diff-base: git {args[0]} failed: {message[-1] if message else proc.returncode}")
        return proc


@contextmanager
def safe_git(folder: str) -> Iterator[SafeGit]:
    """git over the repository holding `folder`, through a stand-in removed afterwards."""
    repo = find_repository(folder)
    stand_in = tempfile.mkdtemp(prefix="lockin-auditor-git-")
    try:
        _build_stand_in(repo, stand_in)
        yield SafeGit(repo, stand_in)
    finally:
        shutil.rmtree(stand_in, ignore_errors=True)
