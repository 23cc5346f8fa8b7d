"""pyproject.toml: PEP 621 dependencies, PEP 735 dependency groups, build requirements, and the
uv, Poetry and PDM tables that choose package indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor.readers import (
    Dependencies,
    IndexUrl,
    Requirement,
    normalize,
    parse_requirement,
    salvage_requirement,
)
from auditor.readers.document import Document
from auditor.readers.locate import Locator, load_toml

if TYPE_CHECKING:
    from auditor.context import FileContext

_UV_INDEX_KEYS = {"index-url": "index-url", "extra-index-url": "extra-index-url", "find-links": "find-links"}


def read_pyproject(ctx: FileContext) -> Dependencies:
    data = load_toml(ctx)
    if data is None:
        return Dependencies()
    reader = _Reader(ctx, data)
    reader.read()
    return reader.deps


def _table(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class _Reader:
    def __init__(self, ctx: FileContext, data: dict) -> None:
        self.ctx = ctx
        self.data = data
        self.locator = Locator(ctx.text)
        self.deps = Dependencies()

    def read(self) -> None:
        project = _table(self.data.get("project"))
        self.pep508(("project",), "dependencies", _strings(project.get("dependencies")), "project.dependencies")
        for group, items in _table(project.get("optional-dependencies")).items():
            self.pep508(("project", "optional-dependencies"), group, _strings(items),
                        "project.optional-dependencies", group)
        for group, items in _table(self.data.get("dependency-groups")).items():
            # {include-group = "..."} entries only point at another group, read on its own.
            self.pep508(("dependency-groups",), group, _strings(items), "dependency-groups", group)
        build = _table(self.data.get("build-system"))
        self.pep508(("build-system",), "requires", _strings(build.get("requires")), "build-system.requires")
        tool = _table(self.data.get("tool"))
        self.uv(_table(tool.get("uv")))
        self.poetry(_table(tool.get("poetry")))
        self.pdm(_table(tool.get("pdm")))

    # -- PEP 508 strings ---------------------------------------------------------------------
    def pep508(self, path: tuple[str, ...], key: str, items: list[str], origin: str,
               group: str | None = None) -> None:
        for text in items:
            where = self.locator.locate(path, key, text)
            try:
                item = parse_requirement(text)
            except ValueError as exc:
                self.ctx.error("parse", f"line {where.line}: invalid requirement {text!r}: {exc}")
                item = salvage_requirement(text)
                if item is None:
                    continue
            self.add(item, where, origin, group)

    def add(self, item: Requirement, where, origin: str, group: str | None = None) -> None:
        item.line, item.column, item.end_line, item.end_column = (
            where.line, where.column, where.end_line, where.end_column)
        item.origin, item.group = origin, group
        self.deps.requirements.append(item)

    def index(self, url: str, option: str, where, name: str | None = None, package: str | None = None,
              explicit: bool = False) -> None:
        self.deps.indexes.append(IndexUrl(
            line=where.line, column=where.column, end_line=where.end_line, end_column=where.end_column,
            url=url, option=option, name=name, package=package, explicit=explicit))

    # -- uv -------------------------------------------------------------------------------------
    def uv(self, uv: dict) -> None:
        for key in ("dev-dependencies", "constraint-dependencies", "override-dependencies"):
            self.pep508(("tool", "uv"), key, _strings(uv.get(key)), f"tool.uv.{key}")
        for path, table in ((("tool", "uv"), uv), (("tool", "uv", "pip"), _table(uv.get("pip")))):
            for key, option in _UV_INDEX_KEYS.items():
                for url in _strings(table.get(key)):
                    self.index(url, f"{'.'.join(path)}.{option}", self.locator.locate(path, key, url))
        names: dict[str, str] = {}
        indexes = uv.get("index")
        for nth, entry in enumerate(indexes if isinstance(indexes, list) else []):
            entry = _table(entry)
            url, name = entry.get("url"), entry.get("name")
            if isinstance(url, str):
                if isinstance(name, str):
                    names[name] = url
                where = self.locator.locate(("tool", "uv", "index"), "url", url, nth)
                self.index(url, "tool.uv.index", where, name if isinstance(name, str) else None,
                           explicit=entry.get("explicit") is True)
        for package, spec in _table(uv.get("sources")).items():
            for source in spec if isinstance(spec, list) else [spec]:
                self.uv_source(package, _table(source), names)

    def uv_source(self, package: str, source: dict, names: dict[str, str]) -> None:
        marker = source.get("marker") if isinstance(source.get("marker"), str) else None
        index = source.get("index")
        where = self.locator.locate(("tool", "uv", "sources"), package, index if isinstance(index, str) else None)
        if isinstance(index, str):
            scope = source.get("extra") or source.get("group")
            item = IndexUrl(line=where.line, column=where.column, end_line=where.end_line,
                            end_column=where.end_column, url=names.get(index, ""), option="tool.uv.sources",
                            name=index, package=package, group=scope if isinstance(scope, str) else None)
            self.deps.indexes.append(item)
        url = source.get("url")
        if isinstance(url, str):
            self.add(Requirement(name=package, key=normalize(package), url=url, marker=marker,
                                 text=f"{package} @ {url}"), where, "tool.uv.sources")

    # -- Poetry ---------------------------------------------------------------------------------
    def poetry(self, poetry: dict) -> None:
        sources = poetry.get("source")  # first: dependencies name these sources
        for nth, entry in enumerate(sources if isinstance(sources, list) else []):
            entry = _table(entry)
            url, name = entry.get("url"), entry.get("name")
            if isinstance(url, str):
                where = self.locator.locate(("tool", "poetry", "source"), "url", url, nth)
                self.index(url, "tool.poetry.source", where, name if isinstance(name, str) else None,
                           explicit=entry.get("priority") == "explicit")
        for key in ("dependencies", "dev-dependencies"):
            self.poetry_table(("tool", "poetry", key), _table(poetry.get(key)), f"tool.poetry.{key}")
        for group, table in _table(poetry.get("group")).items():
            self.poetry_table(("tool", "poetry", "group", group, "dependencies"),
                              _table(_table(table).get("dependencies")), "tool.poetry.group", group)

    def poetry_table(self, path: tuple[str, ...], table: dict, origin: str, group: str | None = None) -> None:
        names = {i.name: i.url for i in self.deps.indexes if i.option == "tool.poetry.source" and i.name}
        for package, spec in table.items():
            if package.lower() == "python":
                continue
            for one in spec if isinstance(spec, list) else [spec]:
                self.poetry_dependency(path, package, one, origin, group, names)

    def poetry_dependency(self, path: tuple[str, ...], package: str, spec: Any, origin: str,
                          group: str | None, names: dict[str, str]) -> None:
        where = self.locator.locate(path, package)
        item = Requirement(name=package, key=normalize(package), text=package)
        if isinstance(spec, str):
            item.specifier = "" if spec.strip() == "*" else spec  # "*" is Poetry for "any version"
        elif isinstance(spec, dict):
            version = spec.get("version")
            item.specifier = version if isinstance(version, str) and version.strip() != "*" else ""
            url = spec.get("url") or spec.get("git") or spec.get("path")
            item.url = url if isinstance(url, str) else None
            markers = spec.get("markers")
            item.marker = markers if isinstance(markers, str) else None
            item.extras = tuple(_strings(spec.get("extras")))
            source = spec.get("source")
            if isinstance(source, str):
                self.index(names.get(source, ""), "tool.poetry.dependencies.source", where, source, package)
        self.add(item, where, origin, group)

    # -- PDM ------------------------------------------------------------------------------------
    def pdm(self, pdm: dict) -> None:
        sources = pdm.get("source")
        for nth, entry in enumerate(sources if isinstance(sources, list) else []):
            entry = _table(entry)
            url = entry.get("url")
            if isinstance(url, str):
                name = entry.get("name")
                where = self.locator.locate(("tool", "pdm", "source"), "url", url, nth)
                self.index(url, "tool.pdm.source", where, name if isinstance(name, str) else None)
        for group, items in _table(pdm.get("dev-dependencies")).items():
            self.pep508(("tool", "pdm", "dev-dependencies"), group, _strings(items), "tool.pdm.dev-dependencies", group)


def document(ctx: FileContext) -> Document:
    """The kind's reader (auditor.discover.kinds): the file's dependencies."""
    return Document(dependencies=read_pyproject(ctx))
