"""A configuration or option the run cannot honour, and the nearest valid spelling every such
message offers."""

from __future__ import annotations


class ConfigError(Exception):
    """A configuration or option the run cannot honour: exit 2 with this one line."""


def nearest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """" (did you mean 'x'?)" for the closest valid spelling, or "" when nothing is close. Ties
    go to the spelling with the fewest differing characters in place (LK1O1 -> LK101, not LK411)."""
    import difflib  # only on the way to an error message

    wanted = word.lower()
    best, best_key = None, (0.6, 0)
    for choice in choices:
        candidate = choice.lower()
        ratio = difflib.SequenceMatcher(None, wanted, candidate).ratio()
        same_place = sum(a == b for a, b in zip(wanted, candidate, strict=False))
        if (ratio, same_place) >= best_key:
            best, best_key = choice, (ratio, same_place)
    return f" (did you mean {best!r}?)" if best is not None else ""
