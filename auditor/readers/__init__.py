"""Static readers for dependency files: requirements files, pyproject.toml, setup.cfg, setup.py.

Each reader turns one file into a `Dependencies` value (requirements and index URLs with their
positions); it is cached in `ctx.state` so every dependency rule shares one parse. Nothing is
ever executed or fetched."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import libcst as cst

    from auditor.checks.base import Rule
    from auditor.context import FileContext

STATE = "dependencies"
_NORMALIZE = re.compile(r"[-_.]+")


def normalize(name: str) -> str:
    """PEP 503 name: lower case, runs of -, _ and . become one -."""
    return _NORMALIZE.sub("-", name).lower()


@dataclass
class Located:
    """Where an item was written: a 1-based span, or a libcst node (setup.py), in `owner`'s file."""

    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    node: cst.CSTNode | None = field(default=None, repr=False, compare=False)
    owner: FileContext | None = field(default=None, repr=False, compare=False)  # an included file


@dataclass
class Requirement(Located):
    """One declared dependency, e.g. `torch[x]==2.1.0+cu121 ; sys_platform == "linux"`."""

    name: str | None = None  # as written; None for a bare URL or path
    key: str | None = None  # PEP 503-normalised name
    extras: tuple[str, ...] = ()
    specifier: str = ""  # PEP 440 specifier, or a Poetry constraint such as "^2.1"
    url: str | None = None  # direct reference, VCS URL or local path
    marker: str | None = None
    origin: str = ""  # where it was declared: "requirements", "project.dependencies", "install_requires", ...
    group: str | None = None  # optional extra / dependency group / poetry group it belongs to
    text: str = ""  # the requirement as written
    build: str | None = None  # a conda build string (`py3.10_cuda11.8_cudnn8_0`)


@dataclass
class IndexUrl(Located):
    """A package index, find-links location or uv/poetry source that decides where wheels come from."""

    url: str = ""  # may be empty for a source naming an index this file does not define
    option: str = ""  # --index-url, --extra-index-url, --find-links, tool.uv.index, tool.poetry.source, ...
    name: str | None = None  # the index's name (uv, poetry, pdm)
    package: str | None = None  # for a source entry: the package it routes to this index
    group: str | None = None  # for a source entry: the extra / dependency group it applies to


@dataclass
class Dependencies:
    requirements: list[Requirement] = field(default_factory=list)
    indexes: list[IndexUrl] = field(default_factory=list)


def read_dependencies(ctx: FileContext) -> Dependencies:
    """The file's dependencies, parsed once per file whichever rule asks first."""
    cached = ctx.state.get(STATE)
    if cached is None:
        cached = ctx.state[STATE] = _read(ctx)
    return cached


def _read(ctx: FileContext) -> Dependencies:
    from auditor.context import PythonContext

    if isinstance(ctx, PythonContext):
        from auditor.readers.setup_py import read_setup_py

        return read_setup_py(ctx)
    from auditor.readers.document import read_document

    return read_document(ctx).dependencies


def report(ctx: FileContext, rule: Rule, item: Located, **fields: Any) -> None:
    """Report `item` in the file it was written in (an included requirements file keeps its own path).
    An item in an extra or dependency group is optional: the base install does without it."""
    from auditor.context import PythonContext

    group = getattr(item, "group", None)
    if group:  # whatever its name (dev, test, gpu): the base install does without it
        kind = "dependency group" if getattr(item, "origin", "") in ("dependency-groups", "tool.poetry.group") \
            else "optional extra"
        fields["__optional"] = ("dependency", f"the {kind} `{group}`")

    if item.node is not None and isinstance(ctx, PythonContext):
        ctx.report(rule, item.node, **fields)
        return
    owner = item.owner or ctx
    ctx.findings.append(owner.make_finding(rule, item.line, item.column, item.end_line, item.end_column, fields))


def parse_requirement(text: str) -> Requirement:
    """A PEP 508 string as a Requirement (no position yet); raises ValueError when malformed."""
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as Pep508

    try:
        parsed = Pep508(text)
    except InvalidRequirement as exc:
        raise ValueError(str(exc).splitlines()[0] if str(exc) else "invalid requirement") from None
    return Requirement(
        name=parsed.name, key=normalize(parsed.name), extras=tuple(sorted(parsed.extras)),
        specifier=str(parsed.specifier), url=parsed.url, marker=str(parsed.marker) if parsed.marker else None,
        text=text,
    )


_LEADING_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def salvage_requirement(text: str) -> Requirement | None:
    """The leading project name of a requirement that packaging rejects, so its name still counts."""
    match = _LEADING_NAME.match(text)
    if match is None:
        return None
    return Requirement(name=match.group(1), key=normalize(match.group(1)), text=text)
