"""Files that moved since the baseline was written (`git mv`, or a plain rename without git).

A baseline records findings by path, so a moved file's old lock-in would come back as new. Like
the fingerprints, which match moved lines by their code, a moved file is matched by its content:
a file the baseline has no entry for is taken to be a recorded file that no longer exists when at
least half of that file's recorded findings (rule, normalised code line, occurrence) are in it, as
git's rename detection asks for half the content. Each recorded file goes to at most one file,
the one holding most of it. A file that was copied (the original still exists) is not a move: the
copy's lock-in is new. Nothing here asks git: the check is the same with or without it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

Signature = tuple[str, str, int]  # rule, normalised code line, occurrence among the file's identical ones


def find_moves(recorded: dict[str, set[Signature]], found: dict[str, set[Signature]],
               gone: Callable[[str], bool]) -> dict[str, str]:
    """{path now: path recorded}. `recorded`: the baseline's files none of whose entries matched;
    `found`: this run's files the baseline has no entry for; `gone(path)`: the recorded file no
    longer exists."""
    candidates = [(len(now_keys & was_keys), now, was)
                  for was, was_keys in recorded.items() if was_keys and gone(was)
                  for now, now_keys in found.items()]
    pairs: dict[str, str] = {}
    taken: set[str] = set()
    for overlap, now, was in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        if now in pairs or was in taken or 2 * overlap < len(recorded[was]) or overlap == 0:
            continue
        pairs[now] = was
        taken.add(was)
    return pairs


def gone_from(folder: str, present: Iterable[str]) -> Callable[[str], bool]:
    """`gone(path)` for paths relative to the baseline's folder: not reported in this run and not on
    disk. A path that would leave the folder is never looked up (a baseline may come with an
    untrusted checkout) and counts as present."""
    seen = set(present)

    def gone(path: str) -> bool:
        if path in seen or os.path.isabs(path) or path.split("/")[0] == ".." or "\0" in path:
            return False
        return not os.path.lexists(os.path.join(folder, path))

    return gone
