"""A discovered file, read for checking: its bytes (or the error entry that replaces them),
whether it can hold a finding at all (the Python prefilter, or its kind's byte gate in
auditor.discover.kinds) and the result of a file ruled out. Light on purpose: a run whose changed
files the cached prefilter rules out decides them here, without the rules or libcst."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from auditor.discover.kinds import BY_NAME as KINDS_BY_NAME
from auditor.model import FileError, FileResult
from auditor.read.text import SourceError, read_regular_file, text_problem

if TYPE_CHECKING:
    from auditor.discover.files import SourceFile


_DIRECTIVE_BYTES = re.compile(rb"noqa:[^\n]*\bLK\d")


def may_hold_directive(data: bytes) -> bool:
    """Whether a file may hold one of our suppression comments (fast byte tests first)."""
    return b"lockin" in data or (b"noqa" in data and _DIRECTIVE_BYTES.search(data) is not None)


def may_hold_findings(source: SourceFile, data: bytes, may_match: Callable[[bytes, str], bool]) -> bool:
    """Whether the file can hold a finding: the Python prefilter for the kinds it applies to, the
    kind's byte gate (auditor.discover.kinds) for the rest; kinds with neither are always read."""
    kind = KINDS_BY_NAME.get(source.kind)
    if kind is None:  # a file list from another version: nothing to read it with
        return False
    if kind.python_prefilter and may_match(data, source.display):
        return True
    if kind.gate is None:
        return not kind.python_prefilter
    lowered = data.lower()
    return any(word in lowered for word in kind.gate)


def needs_check(source: SourceFile, data: bytes, may_match: Callable[[bytes, str], bool],
                directives: bool = False) -> bool:
    """Whether to read the file: it may hold a finding, or (with `directives`: the unused-suppression
    rule runs) a suppression comment of ours."""
    return may_hold_findings(source, data, may_match) or (
        directives and source.kind in KINDS_BY_NAME and may_hold_directive(data))


def unchecked_result(source: SourceFile, data: bytes) -> FileResult:
    """A file the prefilter rules out holds no finding; it is still an error entry when it is not
    text that decodes (a UTF-16 or binary `.py`), as the README promises."""
    kind = KINDS_BY_NAME.get(source.kind)
    problem = text_problem(data, python=kind is not None and kind.decode == "python")
    if problem is None:
        return FileResult(source.display)
    return FileResult(source.display, errors=[FileError(source.display, problem.kind, problem.message)])


def read_bytes(source: SourceFile, max_bytes: int) -> tuple[bytes, FileError | None]:
    """The file's bytes: only a regular file, never through a symbolic link (discovery resolved
    the links it accepts), never more than `max_bytes`."""
    try:
        return read_regular_file(source.path, max_bytes), None
    except SourceError as exc:
        return b"", FileError(source.display, exc.kind, exc.message)
