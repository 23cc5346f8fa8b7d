""".gitignore patterns (gitignore(5)), matched in time bounded by the path's and the pattern's length.

pathspec turns each `**` into a `(?:/.+)?` group: a pattern with ten of them against a 40-level
folder never finished (issue 20, D5), and a segment like `*a*a*a*b` backtracks as a regex. Here a
pattern is cut into path segments. Inside a segment `*`, `?` and `[...]` become a regex whose
stars are atomic groups (what fnmatch does: each star takes the shortest run before the next
literal and never gives it back, which is exact for glob stars), so a segment matches in time
linear in its length. A pattern without `**` is one regex of such segments joined by `/`; one
with `**` is matched segment by segment, the pieces between `**`s each at their leftmost place
(O(path segments x pattern segments)).

Matching is exact: a pattern decides about the path it is given, not about the paths below it,
because the walk never enters an ignored folder (git cannot re-include a file in one either).
`Layer.decide` is the walk's question for one entry; the caller checks ancestors where it
starts below the folder a .gitignore sits in."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PATTERNS = 10_000  # a .gitignore is at most IGNORE_FILE_BYTES; past this many lines it is not one
_DOUBLE = "**"


def _segment_regex(glob: str) -> str:
    """Regex source for one path segment (no `/`), stars atomic as in fnmatch.translate."""
    out: list[str] = []
    pending_star = False
    chunk: list[str] = []  # what follows the last star so far

    def flush(final: bool) -> None:
        nonlocal pending_star
        text = "".join(chunk)
        if pending_star:
            out.append("[^/]*" + text if final else f"(?>[^/]*?{text})")
        else:
            out.append(text)
        chunk.clear()
        pending_star = False

    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        i += 1
        if char == "*":
            if pending_star and not chunk:
                continue  # `**` inside a segment is a plain star
            flush(final=False)
            pending_star = True
        elif char == "?":
            chunk.append("[^/]")
        elif char == "\\" and i < n:
            chunk.append(re.escape(glob[i]))
            i += 1
        elif char == "[":
            end, cls = _char_class(glob, i)
            if cls is None:
                chunk.append(re.escape("["))
            else:
                chunk.append(cls)
                i = end
        else:
            chunk.append(re.escape(char))
    flush(final=True)
    return "".join(out)


def _char_class(glob: str, start: int) -> tuple[int, str | None]:
    """(index after `]`, regex class) for a bracket expression starting after `[`, or (start, None)."""
    i = start
    negate = i < len(glob) and glob[i] in "!^"
    if negate:
        i += 1
    body: list[str] = []
    first = True
    while i < len(glob):
        char = glob[i]
        if char == "]" and not first:
            inner = "".join(body)
            return i + 1, f"[^{inner}/]" if negate else f"(?!/)[{inner}]"  # never a `/` (FNM_PATHNAME)
        first = False
        if char == "\\" and i + 1 < len(glob):
            body.append(re.escape(glob[i + 1]))
            i += 2
            continue
        body.append("-" if char == "-" and body and i + 1 < len(glob) and glob[i + 1] != "]" else re.escape(char))
        i += 1
    return start, None


Piece = tuple[re.Pattern[str], ...]  # consecutive segments between `**`s


@dataclass(frozen=True, slots=True)
class Pattern:
    include: bool  # True: ignores what it matches; False: `!` re-includes it
    dir_only: bool  # a trailing `/`: folders only
    floating: bool  # no `/` but a trailing one: matches the last segment, at any depth
    regex: re.Pattern[str] | None  # the whole path (or the last segment, when floating); None with `**`
    pieces: tuple[Piece, ...] = ()  # with `**`: the segments' regexes between them
    trailing: bool = False  # with `**`: the last one ends the pattern

    def matches(self, rel: str, name: str, is_dir: bool) -> bool:
        """Whether the pattern matches `rel` (relative to its .gitignore's folder, `/`-separated)
        whose last segment is `name`."""
        if self.dir_only and not is_dir:
            return False
        if self.regex is not None:
            return self.regex.fullmatch(name if self.floating else rel) is not None
        return _match_pieces(self.pieces, self.trailing, rel.split("/"))


def _fits(piece: Piece, parts: list[str], at: int) -> bool:
    return all(segment.fullmatch(parts[at + k]) is not None for k, segment in enumerate(piece))


def _match_pieces(pieces: tuple[Piece, ...], trailing: bool, parts: list[str]) -> bool:
    """Segments split at each `**` into pieces: the first must match at the start, the last at
    the end, the ones between anywhere in order. Each middle piece at its leftmost place is
    exact (it leaves the most room to the rest: the argument that makes glob stars greedy), so
    this takes O(path segments x pattern segments) at worst. `trailing`: the pattern ends in
    `/**`, which needs at least one segment."""
    n = len(parts)
    prefix, *middle, suffix = pieces
    if len(prefix) > n or not _fits(prefix, parts, 0):
        return False
    at = len(prefix)
    for piece in middle:
        found = next((i for i in range(at, n - len(piece) + 1) if _fits(piece, parts, i)), None)
        if found is None:
            return False
        at = found + len(piece)
    start = n - len(suffix)
    return start >= at + trailing and _fits(suffix, parts, start)


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless escaped with a backslash."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "
    return stripped


def parse(line: str) -> Pattern | None:
    """One line of a .gitignore; None for blanks, comments and lines that match nothing."""
    line = _strip_trailing_spaces(line.rstrip("\r\n"))
    if not line or line.startswith("#"):
        return None
    include = True
    if line.startswith("!"):
        include, line = False, line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    parts = [p for p in line.split("/") if p]
    leading_double = parts[0] == _DOUBLE and len(parts) > 1  # `**/x` (or `/**/x`): x at any depth
    if leading_double:
        parts = parts[1:]
    if not anchored or (leading_double and len(parts) == 1):
        return Pattern(include, dir_only, True, re.compile(_segment_regex(parts[0])))
    if leading_double or _DOUBLE in parts:
        pieces: list[list[re.Pattern[str]]] = [[]] if leading_double else []
        current: list[re.Pattern[str]] = []
        for part in parts:
            if part == _DOUBLE:
                pieces.append(current)
                current = []
            else:
                current.append(re.compile(_segment_regex(part)))
        pieces.append(current)
        return Pattern(include, dir_only, False, None, tuple(map(tuple, pieces)), parts[-1] == _DOUBLE)
    return Pattern(include, dir_only, False, re.compile("/".join(map(_segment_regex, parts))))


class Layer:
    """One .gitignore file: its folder (with a trailing separator) and its patterns, with one
    combined regex per kind that rejects, in one C call, an entry no pattern can match."""

    __slots__ = ("base", "patterns", "quick_names", "quick_paths", "quick_doubles")

    def __init__(self, base: str, lines: list[str]) -> None:
        self.base = base
        patterns = [p for p in map(parse, lines[:MAX_PATTERNS]) if p is not None]
        self.patterns = patterns[::-1]  # the last matching pattern decides: look from the end
        names = [p.regex.pattern for p in patterns if p.regex is not None and p.floating]
        paths = [p.regex.pattern for p in patterns if p.regex is not None and not p.floating]
        doubles = [_necessary(p.pieces) for p in patterns if p.regex is None]
        self.quick_names = _alternatives(names)
        self.quick_paths = _alternatives(paths)
        self.quick_doubles = _alternatives(doubles)  # searched: what a `**` pattern cannot match without

    def decide(self, path: str, is_dir: bool, sep: str = "/") -> bool | None:
        """True ignored, False re-included by a negation, None no pattern matched."""
        if not path.startswith(self.base):
            return None
        rel = path[len(self.base):]
        if sep != "/":
            rel = rel.replace(sep, "/")
        name = rel.rpartition("/")[2]
        if not ((self.quick_names is not None and self.quick_names.fullmatch(name) is not None)
                or (self.quick_paths is not None and self.quick_paths.fullmatch(rel) is not None)
                or (self.quick_doubles is not None and self.quick_doubles.search(rel) is not None)):
            return None
        for pattern in self.patterns:
            if pattern.matches(rel, name, is_dir):
                return pattern.include
        return None


def _alternatives(sources: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{source})" for source in sources)) if sources else None


def _necessary(pieces: tuple[Piece, ...]) -> str:
    """A regex a path must contain for a `**` pattern to match it: its first piece at the start,
    else its last piece at the end, else its first inner piece anywhere (fixed-length pieces of
    atomic segments: searching it is linear)."""
    def joined(piece: Piece) -> str:
        return "/".join(segment.pattern for segment in piece)

    if pieces[0]:
        return f"^{joined(pieces[0])}(?:/|\\Z)"
    if pieces[-1]:
        return f"(?:^|/){joined(pieces[-1])}\\Z"
    inner = next((piece for piece in pieces if piece), ())
    return f"(?:^|/){joined(inner)}(?:/|\\Z)" if inner else ""
