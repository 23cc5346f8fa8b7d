"""Stage 3 for every kind but Python code: one reader per file kind turns a file into a typed
Document with positions (auditor.readers.document: dependencies, environment settings, commands,
images, YAML/JSON/TOML trees); rules read documents, never syntax. Which reader a kind uses is the
kind's business (auditor.discover.kinds). Readers import no rule code; nothing is ever executed or
fetched.

- `requirements.py`, `pyproject.py`, `setup_cfg.py`, `setup_py.py` (from the tree the Python walk
  already has), `conda.py`: dependency files; `dependencies.py`: any file's dependencies, read once;
- `dockerfile.py`, `shell.py`, `commands.py`: commands, images and environment settings;
- `notebook.py`: notebooks (their code cells go through the Python scan);
- `yaml_config.py`, `compose.py`, `json_config.py`, `toml_config.py`, `yaml_nodes.py`,
  `structured.py`, `locate.py`: structured files and their positions.

This module holds the dependency types every reader shares; it imports no other module of the
project, so the catalogue can use `normalize` at no cost."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from auditor.context import FileContext

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
    # uv `explicit = true`, Poetry `priority = "explicit"`: only packages a source entry pins to this
    # index install from it (those entries are IndexUrls of their own)
    explicit: bool = False


@dataclass
class Dependencies:
    requirements: list[Requirement] = field(default_factory=list)
    indexes: list[IndexUrl] = field(default_factory=list)


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
