"""How each kind of file is checked: the `check` entry points the file-kind registry names
(auditor.discover.kinds), each `(runtime, source, text) -> FileResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.model import FileResult, Finding

if TYPE_CHECKING:
    import libcst as cst

    from auditor.context import FileContext
    from auditor.discover.files import SourceFile
    from auditor.pipeline.runtime import Runtime


def check_python(runtime: Runtime, source: SourceFile, text: str, module: cst.Module | None = None) -> FileResult:
    """A Python file: one parse, one walk; file-level rules of its kind (setup.py) share the tree.
    `module`: the text's tree when the caller has it (the fixer)."""
    from auditor.python.scan import scan_python

    after_walk = None
    if runtime.by_kind.get(source.kind):
        def after_walk(ctx: FileContext) -> None:
            runtime.run_file_rules(source.kind, ctx)
    return scan_python(source.display, text, runtime.walker, runtime.catalogue, after_walk, floor=runtime.floor,
                       hidden=runtime.hidden_codes, module=module,
                       facts=runtime.project.facts(source.path, source.display))


def check_document(runtime: Runtime, source: SourceFile, text: str) -> FileResult:
    """Any other kind: its rules read the Document its reader builds (auditor.readers.document)."""
    from auditor.context import FileContext

    ctx = FileContext(source.display, text, runtime.catalogue, source.kind, runtime.project.facts(source.path,
                                                                                                  source.display))
    ctx.source_path = source.path  # type: ignore[attr-defined]  # where `-r other.txt` includes resolve from
    ctx.scan_root = runtime.root  # type: ignore[attr-defined]  # and the folder they must stay in
    runtime.run_file_rules(source.kind, ctx)
    return FileResult(source.display, findings=sorted(ctx.findings, key=Finding.sort_key), errors=ctx.errors,
                      parsed=True)
