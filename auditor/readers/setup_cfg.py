"""setup.cfg: [options] install_requires / setup_requires / tests_require / dependency_links and
[options.extras_require].

Read with a small line parser that follows configparser's rules as setuptools uses them
(sections, `key = value` or `key: value`, continuation lines indented deeper than their key,
whole-line `#` / `;` comments, keys lower-cased, later duplicates win) instead of configparser
itself: it runs in linear time (configparser's option regex backtracks quadratically on a line
of blanks), keeps every value line's position, and a line it cannot read becomes one error while
the rest of the file still counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.read.text import split_lines
from auditor.readers import Dependencies, IndexUrl, parse_requirement, salvage_requirement
from auditor.readers.document import Document

if TYPE_CHECKING:
    from auditor.context import FileContext

_REQUIREMENT_KEYS = ("install_requires", "setup_requires", "tests_require")

# (line number, 0-based column, text) of each non-empty line of a value
ValueLines = list[tuple[int, int, str]]


def parse_ini(text: str) -> tuple[dict[str, dict[str, ValueLines]], list[tuple[int, str]]]:
    """Sections -> keys -> value lines, and (line number, problem) for lines that are none of
    a section header, an option, a continuation, a comment or blank."""
    sections: dict[str, dict[str, ValueLines]] = {}
    problems: list[tuple[int, str]] = []
    current: dict[str, ValueLines] | None = None
    value: ValueLines | None = None
    indent = 0
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue  # blank lines and comments neither end nor extend a value's items
        depth = len(line) - len(line.lstrip())
        if value is not None and depth > indent:
            value.append((number, depth, stripped))
            continue
        value, indent = None, depth
        if stripped.startswith("[") and "]" in stripped:
            current = sections.setdefault(stripped[1:stripped.rindex("]")].strip(), {})
            continue
        if current is None:
            problems.append((number, "a line before any [section] header"))
            continue
        cut = min((p for p in (line.find("="), line.find(":")) if p >= 0), default=-1)
        key = line[:cut].strip().lower() if cut >= 0 else ""
        if not key:
            problems.append((number, "neither a [section], a `key = value` nor an indented continuation"))
            continue
        value = current[key] = []
        rest = line[cut + 1:]
        if rest.strip():
            value.append((number, cut + 1 + len(rest) - len(rest.lstrip()), rest.strip()))
    return sections, problems


def read_setup_cfg(ctx: FileContext) -> Dependencies:
    sections, problems = parse_ini(ctx.text)
    for number, problem in problems:
        ctx.error("parse", f"line {number}: {problem}; the line is skipped")
    deps = Dependencies()
    options = sections.get("options", {})
    for key in _REQUIREMENT_KEYS:
        _requirements(ctx, deps, options.get(key, []), key)
    for number, column, url in _items(options.get("dependency_links", [])):
        deps.indexes.append(IndexUrl(line=number, column=column + 1, end_line=number, end_column=column + 1 + len(url),
                                     url=url, option="dependency_links"))
    for extra, lines in sections.get("options.extras_require", {}).items():
        _requirements(ctx, deps, lines, "extras_require", extra)
    return deps


def _items(lines: ValueLines) -> ValueLines:
    """One entry per line, comments after ` #` dropped, `file:` references skipped."""
    items = []
    for number, column, text in lines:
        item = text.split(" #", 1)[0].strip()
        if item and not item.startswith("#") and not item.startswith("file:"):
            items.append((number, column, item))
    return items


def _requirements(ctx: FileContext, deps: Dependencies, lines: ValueLines, origin: str,
                  group: str | None = None) -> None:
    for number, column, text in _items(lines):
        try:
            item = parse_requirement(text)
        except ValueError as exc:
            ctx.error("parse", f"line {number}: invalid requirement {text!r}: {exc}")
            item = salvage_requirement(text)
            if item is None:
                continue
        item.line, item.column, item.end_line, item.end_column = number, column + 1, number, column + 1 + len(text)
        item.origin, item.group = origin, group
        deps.requirements.append(item)


def document(ctx: FileContext) -> Document:
    """The kind's reader (auditor.discover.kinds): the file's dependencies."""
    return Document(dependencies=read_setup_cfg(ctx))
