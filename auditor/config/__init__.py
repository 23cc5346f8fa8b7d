"""What a run was asked to do: the configuration file and the command line, as one frozen
`Settings`.

- `keys.py`: the table of every key and option (what it sets, its type and default, its file key,
  its command-line option and help, how a value is read and checked): Settings, the file's reading
  and `audit scan`'s options all come from it, so a new key is one row;
- `settings.py`: `Settings`, its fields taken from the table;
- `files.py`: finding and reading the configuration file (never through a link out of the
  repository);
- `load.py`: the file's table and the command line turned into Settings, key by key;
- `entries.py`: the in-house packages and modules a `[catalogue]` table adds to the catalogue.

This module: `ConfigError` (a configuration or option the run cannot honour: exit 2 with one line)
and the nearest valid spelling every such message offers.
"""

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

