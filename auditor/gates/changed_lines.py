"""`--diff-base REF`: the lines added or changed since a git ref (staged, unstaged and untracked
files included), so a pull request is judged on what it touches.

The checkout may be untrusted (CI runs on pull requests from forks, and a downloaded tree can
carry its own .git/config), so git runs with every way its configuration can start a program
turned off: no pager, no external diff, no textconv, no fsmonitor, no hooks, every clean/smudge
filter the repository names emptied, and no optional lock (git then never writes the index)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

from auditor.config import ConfigError

WHOLE_FILE = None  # in ChangedLines.files: every line counts as changed (a new or binary file)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_GIT_TIMEOUT = 120


@dataclass
class ChangedLines:
    base: str
    top: str  # the repository's top folder
    files: dict[str, set[int] | None] = field(default_factory=dict)  # absolute path -> changed lines

    def touches(self, absolute: str, line: int, end_line: int) -> bool:
        if absolute not in self.files:
            return False
        lines = self.files[absolute]
        return lines is WHOLE_FILE or any(n in lines for n in range(line, max(line, end_line) + 1))

    def has_file(self, absolute: str) -> bool:
        return absolute in self.files


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in ("GIT_CONFIG_NOSYSTEM",)}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat",
                "LC_ALL": "C"})
    return env


_SAFE = ["-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false",
         "-c", "diff.external=", "-c", "core.pager=cat", "--no-pager"]


def _git(args: list[str], cwd: str, extra: list[str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(["git", *_SAFE, *(extra or []), *args], cwd=cwd, env=_git_env(),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=_GIT_TIMEOUT)
    except FileNotFoundError:
        raise ConfigError("--diff-base needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"--diff-base: git {args[0]} took over {_GIT_TIMEOUT} s") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ConfigError(f"--diff-base: git {args[0]} failed: {message[-1] if message else proc.returncode}")
    return proc


def _filter_overrides(cwd: str) -> list[str]:
    """`-c filter.NAME.clean=` (and smudge, process) for every filter the configuration names:
    a filter is a command git would run on worktree files while diffing them."""
    proc = _git(["config", "--name-only", "--get-regexp", r"^filter\."], cwd, check=False)
    names = set()
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split(".")
        if len(parts) >= 3:
            names.add(".".join(parts[1:-1]))
    out: list[str] = []
    for name in sorted(names):
        for key in ("clean", "smudge", "process"):
            out += ["-c", f"filter.{name}.{key}="]
        out += ["-c", f"filter.{name}.required=false"]
    return out


def changed_lines(base: str, folder: str) -> ChangedLines:
    """The lines changed since `base` in the repository holding `folder`."""
    if not base or base.startswith("-") or any(c in base for c in "\0\n"):
        raise ConfigError(f"--diff-base {base!r}: give a branch, tag or commit (e.g. origin/main)")
    cwd = folder if os.path.isdir(folder) else os.path.dirname(folder) or "."
    top = _git(["rev-parse", "--show-toplevel"], cwd).stdout.decode("utf-8", "surrogateescape").strip()
    if not top:
        raise ConfigError("--diff-base: not inside a git repository")
    verify = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}"], top, check=False)
    if verify.returncode != 0:
        raise ConfigError(f"--diff-base {base}: no such commit in this repository (fetch it first, e.g. "
                          f"`git fetch origin main`)")
    commit = verify.stdout.decode().strip()
    extra = _filter_overrides(top)
    diff = _git(["diff", "--no-ext-diff", "--no-textconv", "--no-color", "-U0", "-M", "--src-prefix=a/",
                 "--dst-prefix=b/", commit, "--"], top, extra)
    changed = ChangedLines(base, top)
    parse_diff(diff.stdout.decode("utf-8", "surrogateescape"), top, changed.files)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top, extra)
    for name in untracked.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            changed.files[os.path.normpath(os.path.join(top, name))] = WHOLE_FILE
    return changed


def parse_diff(text: str, top: str, files: dict[str, set[int] | None]) -> None:
    """Fill `files` from `git diff -U0` output: for each new-side file, the lines its hunks add."""
    current: set[int] | None = None
    current_path: str | None = None
    for line in text.split("\n"):
        if line.startswith("+++ "):
            name = _unquote(line[4:])
            if name == "/dev/null" or not name.startswith("b/"):
                current_path, current = None, None
                continue
            current_path = os.path.normpath(os.path.join(top, name[2:]))
            current = files.setdefault(current_path, set()) if files.get(current_path, set()) is not None else None
            continue
        if line.startswith("Binary files ") and line.endswith(" differ"):
            name = _unquote(line[len("Binary files "):-len(" differ")].rsplit(" and ", 1)[-1])
            if name.startswith("b/"):
                files[os.path.normpath(os.path.join(top, name[2:]))] = WHOLE_FILE
            continue
        match = _HUNK.match(line)
        if match and current is not None:
            start = int(match.group(1))
            count = 1 if match.group(2) is None else int(match.group(2))
            current.update(range(start, start + count))


_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def _unquote(name: str) -> str:
    """git's C-style quoting of unusual file names ("a\\tb", octal bytes)."""
    name = name.rstrip("\t")
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out += _ESCAPES[nxt].encode()
                i += 2
                continue
            if nxt.isdigit() and i + 3 < len(body) + 1:
                out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
        out += char.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")
