"""`--add-noqa`: write a suppression comment on the line of every current finding (ruff's
`--add-noqa`), so a team can adopt the gate now and burn the list down later.

Only what is certainly a comment is written: in Python, at the end of a line that ends a token
(not inside a multi-line string, not after a backslash continuation), checked by re-parsing
the file to the same syntax tree; in TOML, at a line end, checked by re-reading the same data;
in requirements files, on lines without a continuation. An existing `# noqa:` list or
`# lockin: ignore[...]` gets the codes added; in YAML, checked by re-reading the same values.
setup.cfg (where `#` after a value is part of the value), JSON (no comments), Dockerfiles (a `#` after
an instruction is not a comment), notebooks, files that are not UTF-8, and links are left alone and
counted as skipped."""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field

from auditor.gates.suppress import comment_prefix
from auditor.model import Finding
from auditor.read import toml_guard
from auditor.read.text import lines_with_ends, split_lines
from auditor.readers.yaml_nodes import YamlError, parse
from auditor.sandbox.safe_files import TreeFile, WriteRefused

MAX_BYTES = 1024 * 1024 * 1024

_NOQA = re.compile(r"(?P<head>#\s*noqa:\s*)(?P<codes>[A-Za-z]+\d+(?:[ \t]*,?[ \t]*[A-Za-z]+\d+)*)", re.I)
_IGNORE = re.compile(r"(?P<head>(?:#|//)\s*lockin:\s*ignore)(?P<list>\[[^\]\n]*\])?", re.I)


@dataclass
class Outcome:
    added: int = 0  # comments written or extended
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def add_noqa(findings: list[Finding], files: dict[str, tuple[str, str]], root: str | None = None) -> Outcome:
    """`files` maps a finding's path to (path to open, kind); `root` is the scanned folder the
    files are read and rewritten in, through their folder's descriptor (auditor/sandbox/safe_files.py)."""
    outcome = Outcome()
    by_file: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for finding in findings:
        if finding.cell is not None:
            outcome.skipped.append((finding.path, "notebook cells are not edited"))
            continue
        by_file[finding.path][finding.line].add(finding.rule)
    for display, lines in sorted(by_file.items()):
        source = files.get(display)
        if source is None:
            outcome.skipped.append((display, "not a file of this run"))
            continue
        why = _edit(source[0], source[1], lines, root or os.path.dirname(os.path.abspath(source[0])))
        if isinstance(why, str):
            outcome.skipped.append((display, why))
        elif why:
            outcome.added += why
            outcome.files += 1
    return outcome


def _edit(path: str, kind: str, wanted: dict[int, set[str]], root: str) -> int | str:
    if kind == "setup-cfg":
        return "setup.cfg takes no comment after a value; use per-file-ignores"
    if comment_prefix(kind) is None:
        return "this kind of file has no comments (JSON); use per-file-ignores"
    if kind == "dockerfile":
        return ("a Dockerfile takes comments only on lines of their own; put `# lockin: ignore[...]` on the line "
                "above the instruction")
    if os.path.islink(path):
        return "a symbolic link; add the comment in the file it points to"
    try:
        with TreeFile(path, root) as tree_file:
            raw = tree_file.read(MAX_BYTES)
            edited = _commented(raw, kind, wanted)
            if isinstance(edited, tuple):
                tree_file.replace(edited[0], raw)
                return edited[1]
            return edited
    except (OSError, UnicodeDecodeError, WriteRefused) as exc:
        return f"not edited: {getattr(exc, 'strerror', None) or exc}"


def _commented(raw: bytes, kind: str, wanted: dict[int, set[str]]) -> tuple[bytes, int] | int | str:
    """(the file's bytes with the comments added, how many), 0 when none is to add, or why not."""
    text = raw.decode("utf-8-sig")
    lines = lines_with_ends(text)  # never str.splitlines(): it also breaks at U+2028, form feeds, ... (D16)
    safe = _safe_lines(text, kind, len(lines))
    if isinstance(safe, str):
        return safe
    prefix = comment_prefix(kind)
    added = 0
    for number, codes in sorted(wanted.items()):
        if not 0 < number <= len(lines) or number not in safe:
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        new = _with_codes(body, sorted(codes), prefix)
        if new != body:
            lines[number - 1] = new + ending
            added += 1
    if not added:
        return 0
    new_text = "".join(lines)
    if not _same_meaning(text, new_text, kind):
        return "the comments would change what the file means; not edited"
    data = new_text.encode("utf-8")
    if raw.startswith(b"\xef\xbb\xbf"):
        data = b"\xef\xbb\xbf" + data
    return data, added


def _with_codes(body: str, codes: list[str], prefix: str) -> str:
    ignore = _IGNORE.search(body)
    if ignore is not None:
        if ignore.group("list") is None:
            return body  # `lockin: ignore` already silences every rule here
        present = {c.strip().lower() for c in ignore.group("list")[1:-1].split(",") if c.strip()}
        missing = [c for c in codes if c.lower() not in present]
        if not missing:
            return body
        inner = ignore.group("list")[1:-1].strip()
        joined = ", ".join([inner, *missing] if inner else missing)
        return body[:ignore.start("list")] + f"[{joined}]" + body[ignore.end("list"):]
    noqa = _NOQA.search(body) if prefix == "#" else None
    if noqa is not None:
        present = {c.lower() for c in re.split(r"[\s,]+", noqa.group("codes")) if c}
        missing = [c for c in codes if c.lower() not in present]
        if not missing:
            return body
        return body[:noqa.end("codes")] + ", " + ", ".join(missing) + body[noqa.end("codes"):]
    directive = f"noqa: {', '.join(codes)}" if prefix == "#" else f"lockin: ignore[{', '.join(codes)}]"
    return f"{body.rstrip()}  {prefix} {directive}"


def _safe_lines(text: str, kind: str, count: int) -> set[int] | str:
    """Lines whose end is outside any string and continuation: a comment can go there."""
    if kind in ("python", "setup-py"):
        safe = set()
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                    safe.add(token.start[0])
        except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
            return "does not tokenize; not edited"
        return safe
    lines = split_lines(text)
    return {n for n in range(1, count + 1) if not lines[n - 1].rstrip().endswith("\\")}


def _same_meaning(old: str, new: str, kind: str) -> bool:
    if kind in ("python", "setup-py"):
        try:
            return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
        except (SyntaxError, ValueError, RecursionError):
            return False
    if kind in ("yaml", "compose", "conda"):
        return _same_yaml(old, new)
    if kind == "pyproject" or kind.endswith("toml"):
        try:
            return toml_guard.loads(old) == toml_guard.loads(new)
        except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
            return False
    return True


def _same_yaml(old: str, new: str) -> bool:
    """Same values and shapes (a `#` inside a block scalar would become text); read with the
    non-constructing, alias-sharing reader audit scans with."""
    def shape(text: str) -> list:
        return [[(path, node.shape, node.value) for path, node, _ in tree.walk()] for tree in parse(text)]

    try:
        return shape(old) == shape(new)
    except YamlError:
        return False
