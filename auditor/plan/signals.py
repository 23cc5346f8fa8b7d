"""What `audit plan` reads in a repository besides the findings (rules/plan/signals.toml): cloud
SDKs, bucket URLs, regions, instance types, training or inference, on-device export, torch.compile
and the place that owns the device choice. Signals never change a score or a verdict.

Only the files the scan discovered are read (so the same ignore rules, the same refusal of links
out of the tree), each opened without following a link, at most `MAX_BYTES` of it, line by line:
the patterns are linear (rules/plan/signals.toml says so), and a line longer than `MAX_LINE` is cut."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.discover.files import SourceFile
from auditor.plan.catalogue import PlanCatalogue, SignalDef

MAX_BYTES = 2_000_000
MAX_LINE = 2_000
MAX_PER_SIGNAL = 5  # places kept per signal: enough to point at, small enough to read
CODE_KINDS = frozenset({"python", "notebook"})
DEPENDENCY_KINDS = frozenset({"requirements", "pyproject", "setup-py", "setup-cfg", "conda", "dockerfile", "shell",
                              "notebook", "compose", "yaml"})
COMMENT_MARKS = {"python": "#", "setup-py": "#", "requirements": "#", "dockerfile": "#", "shell": "#", "conda": "#",
                 "yaml": "#", "compose": "#", "toml-config": "#", "pyproject": "#", "setup-cfg": "#"}
IMAGE_KINDS = frozenset({"dockerfile", "compose", "yaml", "shell"})
_IMPORT = re.compile(r"""(?:^|["'\s;])(?:import|from)\s+([A-Za-z_][\w.]*)""")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Signal:
    kind: str
    what: str
    provider: str | None
    path: str
    line: int
    text: str  # the matched text, cut short

    def to_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, "provider": self.provider, "path": self.path,
                "line": self.line, "text": self.text}


def normal(name: str) -> str:
    """A distribution name as PyPI compares them (`-`, `_` and `.` alike, any case)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _read_lines(path: str) -> list[str]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_BYTES)
    return [line[:MAX_LINE] for line in data.decode("utf-8", errors="replace").splitlines()]


def _comment(kind: str, line: str) -> bool:
    """A whole-line comment: a mention there (`# we used to import boto3`) is no signal."""
    mark = COMMENT_MARKS.get(kind)
    return mark is not None and line.lstrip().startswith(mark)


def _imported(line: str) -> list[str]:
    return _IMPORT.findall(line)


def _matches_import(modules: list[str], wanted: tuple[str, ...]) -> str | None:
    for module in modules:
        for name in wanted:
            if module == name or module.startswith(name + "."):
                return module
    return None


def _matches_package(line: str, wanted: frozenset[str]) -> str | None:
    for token in _TOKEN.findall(line):
        if normal(token) in wanted:
            return token
    return None


def find_signals(files: Iterable[SourceFile], catalogue: PlanCatalogue) -> list[Signal]:
    """Every signal of the catalogue found in `files`, at most MAX_PER_SIGNAL places each, by path."""
    found: list[Signal] = []
    counts: dict[int, int] = {}
    definitions = (*catalogue.signals, *tool_signals(catalogue))
    packages = {index: frozenset(map(normal, d.packages)) for index, d in enumerate(definitions)}
    for source in sorted(files, key=lambda f: f.display):
        for number, line in enumerate(_read_lines(source.path) if _wanted(source, definitions) else [], start=1):
            if _comment(source.kind, line):
                continue
            modules = _imported(line) if source.kind in CODE_KINDS else []
            for index, definition in enumerate(definitions):
                if counts.get(index, 0) >= MAX_PER_SIGNAL:
                    continue
                hit = _hit(definition, source.kind, line, modules, packages[index])
                if hit is not None:
                    counts[index] = counts.get(index, 0) + 1
                    found.append(Signal(definition.kind, definition.what, definition.provider, source.display, number,
                                        hit[:80]))
    return found


def tool_signals(catalogue: PlanCatalogue) -> tuple[SignalDef, ...]:
    """The serving and training tools (rules/plan/tools.toml) as signals of kind `tool`, named by their display."""
    found = []
    for tool in catalogue.tools:
        found.append(SignalDef("tool", tool.display, None, tool.imports, tool.packages, None, None))
        found += [SignalDef("tool", tool.display, None, (), (), image, IMAGE_KINDS) for image in tool.images]
    return tuple(found)


def _wanted(source: SourceFile, definitions: tuple[SignalDef, ...]) -> bool:
    return source.kind in CODE_KINDS or source.kind in DEPENDENCY_KINDS or any(
        d.pattern is not None and (d.files is None or source.kind in d.files) for d in definitions)


def _hit(definition: SignalDef, kind: str, line: str, modules: list[str], packages: frozenset[str]) -> str | None:
    if definition.imports and modules:
        module = _matches_import(modules, definition.imports)
        if module is not None:
            return f"import {module}"
    if packages and kind in DEPENDENCY_KINDS:
        package = _matches_package(line, packages)
        if package is not None:
            return package
    if definition.pattern is not None and (definition.files is None or kind in definition.files):
        match = definition.pattern.search(line)
        if match is not None:
            return match.group(0).strip()
    return None


def of_kind(signals: list[Signal], *kinds: str) -> list[Signal]:
    """The signals of `kinds`; a provider name (aws, gcp, azure) selects the cloud signals of that provider."""
    return [s for s in signals if s.kind in kinds or (s.provider is not None and s.provider in kinds)]
