"""`--diff-base REF`: the lines added or changed since the branch left REF (staged, unstaged and
untracked files included), so a pull request is judged on what it touches.

The base is the merge-base of REF and HEAD, as `git diff REF...HEAD` takes it: once REF moves on
after the branch point, what REF gained since is not the pull request's. `REF...HEAD` and `REF...`
are accepted and mean the same. git runs through auditor/sandbox/safe_git.py: the checkout may be
untrusted, and git reads none of its configuration."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from auditor.config import ConfigError
from auditor.sandbox.safe_git import SafeGit, safe_git

WHOLE_FILE = None  # in ChangedLines.files: every line counts as changed (a new or binary file)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_DIFF = ["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", "--no-color", "-U0", "-M",
         "--src-prefix=a/", "--dst-prefix=b/"]


@dataclass
class ChangedLines:
    base: str
    top: str  # the repository's top folder
    files: dict[str, set[int] | None] = field(default_factory=dict)  # absolute path -> changed lines
    merge_base: str = ""  # the commit compared against

    def touches(self, absolute: str, line: int, end_line: int) -> bool:
        if absolute not in self.files:
            return False
        lines = self.files[absolute]
        return lines is WHOLE_FILE or any(n in lines for n in range(line, max(line, end_line) + 1))

    def has_file(self, absolute: str) -> bool:
        return absolute in self.files


def split_base(base: str) -> str:
    """REF from `REF`, `REF...HEAD` or `REF...`; a usage error for anything else."""
    usage = f"--diff-base {base!r}: give a branch, tag or commit (e.g. origin/main), or REF...HEAD"
    if not base or base.startswith("-") or any(c in base for c in "\0\n"):
        raise ConfigError(usage)
    ref, dots, head = base.partition("...")
    if dots:
        if not ref:
            raise ConfigError(usage)
        if head not in ("", "HEAD"):
            raise ConfigError(f"--diff-base {base!r}: the lines changed are those of the working tree, so the "
                              "right side of REF...HEAD must be HEAD (or empty)")
        return ref
    if ".." in base:
        raise ConfigError(f"--diff-base {base!r}: give REF or REF...HEAD (the changes since the branch left REF); "
                          "a two-dot range compares with REF's tip")
    return base


def changed_lines(base: str, folder: str) -> ChangedLines:
    """The lines changed since the branch holding `folder` left `base`."""
    ref = split_base(base)
    with safe_git(folder) as git:
        top = git.repo.top
        commit = _commit(git, ref, f"--diff-base {ref}: no such commit in this repository (fetch it first, e.g. "
                                   "`git fetch origin main`)")
        head = _commit(git, "HEAD", "--diff-base: this repository has no commit yet")
        found = git.run(["merge-base", commit, head], check=False)
        merge_base = found.stdout.decode().strip()
        if found.returncode != 0 or not merge_base:
            raise ConfigError(f"--diff-base {ref}: it has no common ancestor with HEAD (a shallow clone? fetch the "
                              "whole history, e.g. actions/checkout with fetch-depth: 0)")
        diff = git.run([*_DIFF, merge_base, "--"])
        changed = ChangedLines(base, top, merge_base=merge_base)
        parse_diff(diff.stdout.decode("utf-8", "surrogateescape"), top, changed.files)
        untracked = git.run(["ls-files", "--others", "--exclude-standard", "-z"])
    for name in untracked.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            changed.files[os.path.normpath(os.path.join(top, name))] = WHOLE_FILE
    return changed


def _commit(git: SafeGit, ref: str, missing: str) -> str:
    verify = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], check=False)
    if verify.returncode != 0:
        raise ConfigError(missing)
    return verify.stdout.decode().strip()


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
