"""Suppressions: comments that silence findings, and the rule that reports the ones that silence
nothing.

On the line where a finding starts:

    x = x.cuda()  # lockin: ignore[LK102]        one rule (codes or names, comma-separated)
    import pynvml  # lockin: ignore               every rule on this line
    torch.cuda.synchronize()  # noqa: LK204      ruff/flake8 style, with our codes

Anywhere in the file, on a line of its own:

    # lockin: ignore-file[LK401]                  these rules in the whole file
    # lockin: ignore-file                         every rule in the whole file

A `# noqa` with our codes but without its colon, or with a space before it (`# noqa LK102`,
`# noqa : LK102`), silences nothing and is reported (LK001, with the fix that spells it right), as
ruff warns about malformed `# noqa` directives rather than passing over them in silence.

A bare `# noqa` is deliberately not honoured: codebases use it for flake8 and pyflakes, and
treating it as ours would silently hide lock-in. In a `# noqa:` list only codes of our rules (and
`LK` codes that are no rule) are ours; the others belong to other linters and are left alone.
The comment marker comes from the file kind (auditor.discover.kinds: `#`, `//` in CUDA sources, none in
JSON); in Python and notebook code only real comments count (tokenize tells), never text inside a
string; in a Dockerfile a directive on a line of its own also covers the instruction below it."""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from auditor.discover.kinds import BY_NAME
from auditor.discover.kinds import comment_prefix as declared
from auditor.model import Finding
from auditor.read.text import line_starts, split_lines

DEFAULT_PREFIX = "#"
OUR_PREFIX = "LK"  # a code in a noqa list with this prefix is ours even when no rule has it


def comment_prefix(kind: str) -> str | None:
    """How a line comment starts in files of this kind (the registry, auditor.discover.kinds); None: the
    format has no comments (JSON), so nothing there can be suppressed inline."""
    return declared(kind)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(prefix: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(prefix)
    if pattern is None:
        marker = re.escape(prefix)
        pattern = _PATTERNS[prefix] = re.compile(
            rf"{marker}\s*lockin:\s*(?P<kind>ignore-file|ignore)(?:\[(?P<names>[^\]\n]*)\])?"
            rf"|{marker}\s*noqa:\s*(?P<codes>[A-Za-z]+\d+(?:[ \t]*,?[ \t]*[A-Za-z]+\d+)*)"
            # malformed: no colon, or a space before it
            rf"|(?P<bad_head>{marker}\s*noqa)(?:[ \t]+:[ \t]*|[ \t]+)(?P<bad>[A-Za-z]+\d+(?:[ \t]*,[ \t]*[A-Za-z]+\d+)*)",
            re.IGNORECASE)
    return pattern


@dataclass
class Directive:
    """One suppression comment. Columns are 1-based, end exclusive, in the file's text."""

    line: int
    column: int  # where the directive starts (its comment marker)
    end_column: int
    file_level: bool
    noqa: bool  # `noqa: A1, B2` (foreign codes allowed) rather than `lockin: ignore[...]`
    items: list[tuple[str, int, int]] | None  # (code or name as written, column, end column); None: every rule
    text_after: str = ""  # what follows the directive on its line (more comment text?)
    alone: bool = False  # nothing but blanks before it on its line
    used: set[str] = field(default_factory=set)  # items that silenced a finding (lower case)
    used_all: bool = False
    corrected: str | None = None  # a malformed `noqa` (no colon, or a space before it): how to write it


_SPLIT = re.compile(r"[^\s,]+")


def find_directives(text: str, prefix: str = DEFAULT_PREFIX, python: bool = False,
                    ours: tuple[str, ...] = (OUR_PREFIX,)) -> list[Directive]:
    """Every suppression comment of a file (in Python, only those in real comments). A `noqa:`
    list counts only when it names a code starting with one of `ours` (the code prefixes of the
    loaded rules): flake8's `# noqa: F401` lines, common in big codebases, cost no tokenizing."""
    marker = prefix.strip()
    pattern = _pattern(marker)
    lines: list[tuple[int, str, list[re.Match[str]]]] = []
    starts = line_starts(text) if "\r" in text else None  # a lone CR ends a line too (auditor.read.text)
    for match in pattern.finditer(text):
        if match.group("kind") is None and not _names_ours(_listed(match), ours):
            continue
        if starts is None:
            start = text.rfind("\n", 0, match.start()) + 1
            number = text.count("\n", 0, start) + 1
            end = text.find("\n", match.end())
        else:
            number = bisect.bisect_right(starts, match.start())
            start = starts[number - 1]
            end = starts[number] if number < len(starts) else -1
        if lines and lines[-1][0] == number:
            lines[-1][2].append(match)
            continue
        line = text[start:end if end >= 0 else len(text)].rstrip("\r\n")
        lines.append((number, line, [match]))
    if not lines:
        return []
    comments = _python_comments(text) if python else None
    directives = []
    for number, line, _ in lines:
        begin = 0
        if comments is not None:
            if number not in comments:
                continue
            begin = comments[number]
        for match in pattern.finditer(line, begin):
            if match.group("kind") is None and not _names_ours(_listed(match), ours):
                continue
            directives.append(_directive(number, line, match))
    return directives


def _listed(match: re.Match[str]) -> str:
    """The codes of a `noqa` directive, well-formed or not."""
    return match.group("codes") if match.group("codes") is not None else match.group("bad")


def _names_ours(codes: str, ours: tuple[str, ...]) -> bool:
    upper = codes.upper()
    return any(prefix in upper for prefix in ours)


def _directive(number: int, line: str, match: re.Match[str]) -> Directive:
    kind = match.group("kind")
    file_level = kind is not None and kind.lower() == "ignore-file"
    corrected = None
    if kind is not None:
        group = "names"
        listed = match.group("names")
    elif match.group("codes") is not None:
        group = "codes"
        listed = match.group("codes")
    else:
        group = "bad"
        listed = match.group("bad")
        corrected = f"{match.group('bad_head')}: {listed}"
    items = None
    if listed is not None:
        offset = match.start(group)
        items = [(m.group(0), offset + m.start() + 1, offset + m.end() + 1) for m in _SPLIT.finditer(listed)]
    if file_level and line[:match.start()].strip():
        file_level = False  # a file-level directive must stand on a line of its own; here it is not one at all
        items = []
    return Directive(number, match.start() + 1, match.end() + 1, file_level, kind is None, items,
                     line[match.end():], alone=not line[:match.start()].strip(), corrected=corrected)


def _python_comments(text: str) -> dict[int, int]:
    """Line -> 0-based column where its comment starts, from the tokenizer (text in strings and
    docstrings is not a comment). A file the tokenizer rejects falls back to every line."""
    found: dict[int, int] = {}
    try:
        # newline=None: the tokenizer's lines end where Python's do (a lone CR too), as ours
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        return {n: 0 for n in range(1, len(split_lines(text)) + 2)}
    return found


@dataclass
class Suppressions:
    """What the suppression pass made of one file's findings."""

    kept: list[Finding]
    suppressed: list[tuple[Finding, str]]  # (finding, "inline" | "file")
    directives: list[Directive]


def apply(findings: list[Finding], directives: list[Directive], above: bool = False) -> Suppressions:
    """Split the findings into kept and suppressed, marking which directive items were used. With
    `above` (Dockerfiles, where `#` starts a comment only at the start of a line), a directive on a
    line of its own also covers the line below it."""
    every = directives
    directives = [d for d in directives if d.corrected is None]  # a malformed directive silences nothing
    if not directives:
        return Suppressions(findings, [], every)
    by_line: dict[int, list[Directive]] = {}
    whole_file = [d for d in directives if d.file_level]
    for directive in directives:
        if not directive.file_level:
            by_line.setdefault(directive.line, []).append(directive)
            if above and directive.alone:
                by_line.setdefault(directive.line + 1, []).append(directive)
    kept: list[Finding] = []
    suppressed: list[tuple[Finding, str]] = []
    for finding in findings:
        how = None
        for directive in by_line.get(finding.line, ()):
            if _silences(directive, finding):
                how = "inline"
        for directive in whole_file:
            if _silences(directive, finding):
                how = how or "file"
        if how is None:
            kept.append(finding)
        else:
            suppressed.append((finding, how))
    return Suppressions(kept, suppressed, every)


def _silences(directive: Directive, finding: Finding) -> bool:
    if directive.items is None:
        directive.used_all = True
        return True
    code, name = finding.rule.lower(), finding.name
    hit = False
    for item, _, _ in directive.items:
        lowered = item.lower()
        if lowered == code or lowered == name:
            directive.used.add(lowered)
            hit = True
    return hit


@dataclass(frozen=True)
class Problem:
    """A directive (or one item of it) that silences nothing: where, why, and the edit that removes it."""

    line: int
    column: int
    end_column: int
    message: str
    removal: tuple[int, int, str]  # (column, end column, replacement) on `line`


def problems(directives: Iterable[Directive], lines: list[str], known: Callable[[str], str | None],
             selected: Callable[[str], bool], suggest: Callable[[str], str]) -> list[Problem]:
    """Unused directives and items, and unknown codes.

    `known(item)` gives the rule code an item names (None: no rule of ours), `selected(code)`
    whether that rule ran (an item for a rule that did not run cannot be judged), `suggest(item)`
    the nearest valid spelling."""
    found: list[Problem] = []
    for d in directives:
        line = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
        if d.corrected is not None:
            written = line[d.column - 1:d.end_column - 1]
            found.append(Problem(d.line, d.column, d.end_column,
                                 f"malformed suppression: `{written}` silences nothing; write `{d.corrected}` "
                                 f"(a colon right after noqa)", (d.column, d.end_column, d.corrected)))
            continue
        if d.items is None:
            if not d.used_all:
                what = "file-level suppression" if d.file_level else "suppression"
                found.append(Problem(d.line, d.column, d.end_column, f"unused {what}: no finding to silence "
                                     f"{'in this file' if d.file_level else 'on this line'}",
                                     _remove_directive(d, line)))
            continue
        bad: list[tuple[str, int, int, str]] = []  # item, column, end column, why
        ours = 0
        for item, column, end_column in d.items:
            code = known(item)
            if code is None:
                if d.noqa and not item.upper().startswith(OUR_PREFIX):
                    continue  # another linter's code
                ours += 1
                bad.append((item, column, end_column, f"unknown rule {item!r}{suggest(item)}"))
                continue
            ours += 1
            if item.lower() in d.used or not selected(code):
                continue
            where = "in this file" if d.file_level else "on this line"
            bad.append((item, column, end_column, f"unused suppression: {item} reports nothing {where}"))
        kept = [i for i in d.items if not any(i[1] == b[1] for b in bad)]
        for _item, column, end_column, why in bad:
            if len(kept) == 0 and ours == len(d.items):
                removal = _remove_directive(d, line)  # nothing left: the whole comment goes
            else:
                removal = _remove_item(line, column, end_column)
            found.append(Problem(d.line, column, end_column, why, removal))
    return found


def _remove_directive(d: Directive, line: str) -> tuple[int, int, str]:
    """Delete the directive and the spaces before it; keep a comment marker when text follows."""
    start = d.column - 1
    if d.text_after.strip():
        marker = line[start:start + 2]
        return d.column, d.end_column, "#" if marker.startswith("#") else marker
    while start > 0 and line[start - 1] in " \t":
        start -= 1
    return start + 1, len(line) + 1, ""


def _remove_item(line: str, column: int, end_column: int) -> tuple[int, int, str]:
    """Delete one code from a list, with the separator that joins it to its neighbour."""
    start, end = column - 1, end_column - 1
    after = end
    while after < len(line) and line[after] in " \t,":
        after += 1
    if after < len(line) and line[after] not in "]" and "," in line[end:after]:
        return column, after + 1, ""
    before = start
    while before > 0 and line[before - 1] in " \t,":
        before -= 1
    return before + 1, end_column, ""


def without_suppressed(findings: list[Finding], text: str, kind: str = "python") -> list[Finding]:
    """The findings no directive silences (kept for callers that only want those)."""
    declared = BY_NAME.get(kind)
    prefix = declared.comment if declared is not None else DEFAULT_PREFIX
    if prefix is None:
        return findings
    directives = find_directives(text, prefix, python=declared is not None and declared.python)
    return apply(findings, directives, declared is not None and declared.suppress_above).kept


# -- per-file-ignores: applied after the cache, from the settings ---------------------------------------

def per_file_ignored(path: str, rule_code: str, rule_name: str,
                     table: tuple[tuple[str, tuple[str, ...]], ...], absolute: str) -> bool:
    """Whether a per-file-ignores entry covers this finding. Globs: a bare name matches the file
    name, an absolute glob the absolute path; selectors are codes, prefixes, names or ALL."""
    import fnmatch
    import os

    name = os.path.basename(path)
    for glob, selectors in table:
        if os.path.isabs(glob):
            if not fnmatch.fnmatchcase(absolute, glob):
                continue
        elif not fnmatch.fnmatchcase(name, glob):
            continue
        for selector in selectors:
            s = selector.strip()
            if s.upper() == "ALL" or rule_code.upper().startswith(s.upper()) or rule_name == s.lower():
                return True
    return False
