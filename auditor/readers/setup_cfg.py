"""setup.cfg: [options] install_requires / setup_requires / tests_require / dependency_links and
[options.extras_require]."""

from __future__ import annotations

import configparser
from typing import TYPE_CHECKING

from auditor.readers import Dependencies, IndexUrl, parse_requirement, salvage_requirement
from auditor.readers.locate import Locator

if TYPE_CHECKING:
    from auditor.context import FileContext
    from auditor.readers.document import Document

_REQUIREMENT_KEYS = ("install_requires", "setup_requires", "tests_require")


def read_setup_cfg(ctx: FileContext) -> Dependencies:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(ctx.text, source=ctx.path)
    except configparser.Error as exc:
        ctx.error("parse", f"invalid setup.cfg: {str(exc).splitlines()[0]}")
        return Dependencies()
    deps = Dependencies()
    locator = Locator(ctx.text, quoted=False)
    if parser.has_section("options"):
        options = parser["options"]
        for key in _REQUIREMENT_KEYS:
            _requirements(ctx, deps, locator, ("options",), key, options.get(key, ""), key)
        for url in _lines(options.get("dependency_links", "")):
            where = locator.locate(("options",), "dependency_links", url)
            deps.indexes.append(IndexUrl(line=where.line, column=where.column, end_line=where.end_line,
                                         end_column=where.end_column, url=url, option="dependency_links"))
    if parser.has_section("options.extras_require"):
        for extra, value in parser["options.extras_require"].items():
            _requirements(ctx, deps, locator, ("options", "extras_require"), extra, value,
                          "extras_require", extra)
    return deps


def _lines(value: str) -> list[str]:
    """A multi-line option: one entry per line (or per `;`-free comma list), comments dropped."""
    items = []
    for line in value.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#") and not line.startswith("file:"):
            items.append(line)
    return items


def _requirements(ctx: FileContext, deps: Dependencies, locator: Locator, path: tuple[str, ...], key: str,
                  value: str, origin: str, group: str | None = None) -> None:
    for text in _lines(value):
        where = locator.locate(path, key, text)
        try:
            item = parse_requirement(text)
        except ValueError as exc:
            ctx.error("parse", f"line {where.line}: invalid requirement {text!r}: {exc}")
            item = salvage_requirement(text)
            if item is None:
                continue
        item.line, item.column, item.end_line, item.end_column = (
            where.line, where.column, where.end_line, where.end_column)
        item.origin, item.group = origin, group
        deps.requirements.append(item)


def document(ctx: FileContext) -> Document:
    """The kind's reader (auditor.kinds): the file's dependencies."""
    from auditor.readers.document import Document

    return Document(dependencies=read_setup_cfg(ctx))
