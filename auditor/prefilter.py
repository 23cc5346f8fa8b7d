"""The byte-level prefilter: which Python files can hold a finding at all (only those are parsed).

Two stages over the lower-cased bytes. First, plain substring checks for a few anchors (`cuda`,
`nccl`, ... : `in` on bytes is a fast C search, several times cheaper than one regex with the
same alternatives). A rule's own `tokens` let a file through on their own. A catalogue row needs
more: the walker only reaches `vllm._C.ops` through an import or a dotted use that spells every
component as a whole identifier, so a file is kept for that row only when its anchor is present
and every component is one of the file's identifiers. That second stage runs only on files an
anchor hit and drops the files that merely mention `vllm` or `..._parallel` (a third to a half of
the anchor hits on real code) without ever dropping one the walker could report. A third kind of
anchor, the name of a wrapped GPU library, needs an identifier that starts with it
(`flash_attn`, `flash_attn_func`), not one that merely contains it (`_supports_flash_attn`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_IDENTIFIER = re.compile(rb"[a-z0-9_]+")


class Prefilter:
    """`prefilter(data)` is False only when no rule can report anything in `data`."""

    def __init__(self, tokens: Iterable[str], qualified_names: Iterable[tuple[str, str]],
                 word_starts: Iterable[str] = ()) -> None:
        """`tokens`: lower-case substrings that let a file through alone; `qualified_names`:
        (anchor, qualified name) for each catalogue row; `word_starts`: names that let a file
        through when an identifier starts with them."""
        clauses: dict[bytes, list[frozenset[bytes]]] = {}
        for token in tokens:
            clauses[token.lower().encode()] = []  # unconditional
        for anchor, name in qualified_names:
            key = anchor.lower().encode()
            words = frozenset(part.lower().encode() for part in name.split("."))
            if key not in clauses:
                clauses[key] = [words]
            elif clauses[key]:  # an unconditional anchor needs no conditions
                clauses[key].append(words)
        # An anchor that contains a shorter one is present only where that one is too: its
        # conditions can move to the shorter anchor, which saves a scan of every file.
        # An unconditional anchor inside another makes that one redundant.
        for anchor in sorted(clauses, key=len, reverse=True):
            inner = [o for o in clauses if o != anchor and o in anchor]
            if any(not clauses[o] for o in inner):
                del clauses[anchor]
            elif inner and clauses[anchor]:
                clauses[min(inner, key=len)].extend(clauses[anchor])
                del clauses[anchor]
        self.conditions: dict[bytes, tuple[frozenset[bytes], ...] | None] = {
            anchor: (_minimal(conds) if conds else None) for anchor, conds in clauses.items()
        }
        # Unconditional anchors first: the common file with "cuda" is decided by the first check.
        self.anchors = tuple(sorted(self.conditions, key=lambda a: (self.conditions[a] is not None, a)))
        self.word_starts = tuple(sorted({w.lower().encode() for w in word_starts}))

    def __call__(self, data: bytes) -> bool:
        lowered = data.lower()
        words: set[bytes] | None = None
        for anchor in self.anchors:
            if anchor not in lowered:
                continue
            conditions = self.conditions[anchor]
            if conditions is None:
                return True
            if words is None:
                words = set(_IDENTIFIER.findall(lowered))
            if any(condition <= words for condition in conditions):
                return True
        for start in self.word_starts:
            if start in lowered:
                if words is None:
                    words = set(_IDENTIFIER.findall(lowered))
                if any(word.startswith(start) for word in words):
                    return True
        return False


def _minimal(conditions: list[frozenset[bytes]]) -> tuple[frozenset[bytes], ...]:
    """Drop conditions that include another one (the smaller one is met whenever they are)."""
    unique = set(conditions)
    return tuple(sorted((c for c in unique if not any(o < c for o in unique)), key=sorted))
