"""tomllib for untrusted text: the key shapes it reads in quadratic time are refused first.

tomllib builds every prefix of a dotted key or table header (`a.b.c` -> `a`, `a.b`): a header of
500,000 parts in a 1 MB pyproject.toml, or a 400 kB dotted key in conf/train.toml or
lockin-auditor.toml, never finished (issue 20, D8). Real keys have a handful of parts; one of
MAX_KEY_PARTS or more is refused before tomllib sees the text, as a TOMLDecodeError, so every
caller's handling of invalid TOML applies. The screen is one regex search with possessive
quantifiers (linear), and only texts with that many dots pay for it. Every reader of a scanned
repository's TOML (and of its configuration) parses through `loads`."""

from __future__ import annotations

import re
import tomllib
from typing import Any

MAX_KEY_PARTS = 64
_ATOM = r"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
# MAX_KEY_PARTS atoms each followed by a dot: a key (or header) of more than that many parts
# (a string holding as many dot-separated words matches too; no real file has one)
_LONG_KEY = re.compile(rf"(?:{_ATOM}[ \t]*+\.[ \t]*+){{{MAX_KEY_PARTS}}}")


def long_key_line(text: str) -> int | None:
    """The line of a dotted key or header of MAX_KEY_PARTS parts or more, or None."""
    if text.count(".") < MAX_KEY_PARTS:
        return None
    found = _LONG_KEY.search(text)
    return None if found is None else text.count("\n", 0, found.start()) + 1


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads, after the screen; raises tomllib.TOMLDecodeError for either."""
    line = long_key_line(text)
    if line is not None:
        raise tomllib.TOMLDecodeError(f"a key or table header of over {MAX_KEY_PARTS} dotted parts (line {line}), "
                                      "which takes the TOML parser quadratic time")
    return tomllib.loads(text)
