"""The dependencies of any file, read once per file whichever rule asks first: setup.py's from
the tree the Python walk already has (auditor.readers.setup_py), every other kind's from the
Document its reader builds (auditor.readers.document)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.context import PythonContext
from auditor.readers.document import read_document
from auditor.readers.setup_py import read_setup_py

if TYPE_CHECKING:
    from auditor.context import FileContext
    from auditor.readers import Dependencies

STATE = "dependencies"


def read_dependencies(ctx: FileContext) -> Dependencies:
    """The file's dependencies, parsed once per file whichever rule asks first."""
    cached = ctx.state.get(STATE)
    if cached is None:
        cached = ctx.state[STATE] = _read(ctx)
    return cached


def _read(ctx: FileContext) -> Dependencies:
    if isinstance(ctx, PythonContext):
        return read_setup_py(ctx)
    return read_document(ctx).dependencies
