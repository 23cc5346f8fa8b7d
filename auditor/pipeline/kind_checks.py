"""How each kind of file is checked: the `check` entry points the file-kind registry names
(auditor.discover.kinds), each `(runtime, source, text) -> FileResult`: Python files walked,
other kinds read into a Document, notebooks both (their code cells as one Python text, their shell
and magic lines as a Document, then every finding placed in its cell)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from auditor.context import FileContext
from auditor.model import FileError, FileResult, Finding
from auditor.python.scan import scan_python
from auditor.readers.document import STATE
from auditor.readers.notebook import Notebook, NotebookError, magics_document, read_notebook

if TYPE_CHECKING:
    import libcst as cst

    from auditor.discover.files import SourceFile
    from auditor.pipeline.runtime import Runtime


def check_python(runtime: Runtime, source: SourceFile, text: str, module: cst.Module | None = None) -> FileResult:
    """A Python file: one parse, one walk; file-level rules of its kind (setup.py) share the tree.
    `module`: the text's tree when the caller has it (the fixer)."""
    after_walk = None
    if runtime.by_kind.get(source.kind):
        def after_walk(ctx: FileContext) -> None:
            runtime.run_file_rules(source.kind, ctx)
    return scan_python(source.display, text, runtime.walker, runtime.catalogue, after_walk, floor=runtime.floor,
                       hidden=runtime.hidden_codes, module=module,
                       facts=runtime.facts(source))


def check_document(runtime: Runtime, source: SourceFile, text: str) -> FileResult:
    """Any other kind: its rules read the Document its reader builds (auditor.readers.document)."""
    ctx = FileContext(source.display, text, runtime.catalogue, source.kind, runtime.project.facts(source.path,
                                                                                                  source.display))
    ctx.source_path = source.path  # type: ignore[attr-defined]  # where `-r other.txt` includes resolve from
    ctx.scan_root = runtime.root  # type: ignore[attr-defined]  # and the folder they must stay in
    runtime.run_file_rules(source.kind, ctx)
    return FileResult(source.display, findings=sorted(ctx.findings, key=Finding.sort_key), errors=ctx.result_errors(),
                      parsed=True)


def check_notebook(runtime: Runtime, source: SourceFile, text: str) -> FileResult:
    """The check of notebooks (auditor.discover.kinds): findings of the code cells and of the
    shell and magic lines, suppressions applied on the cells' text, then placed in their cells."""
    try:
        notebook = read_notebook(text)
    except NotebookError as exc:
        return FileResult(source.display, errors=[FileError(source.display, "parse", str(exc))])
    result = FileResult(source.display, parsed=True)
    findings: list[Finding] = []
    shell: list[Finding] = []
    if notebook.shell or notebook.env:
        ctx = FileContext(source.display, notebook.original, runtime.catalogue, "notebook")
        ctx.source_path = source.path  # type: ignore[attr-defined]
        ctx.scan_root = runtime.root  # type: ignore[attr-defined]  # includes stay inside it
        ctx.state[STATE] = magics_document(notebook)
        runtime.run_file_rules("notebook", ctx)
        shell = ctx.findings
        result.errors.extend(_in_cells(ctx.result_errors(), notebook))
    if runtime.may_match(notebook.code.encode("utf-8", "replace")):  # markdown and outputs do not count
        # `!nvidia-smi` in a cell keeps the code's accelerator swaps back as a CUDA call would
        findings.extend(_python_findings(runtime, source, notebook, result, tuple(shell)))
    findings.extend(shell)
    result.findings = sorted(findings, key=Finding.sort_key)
    runtime.suppress(source, notebook.original, result)  # in the joined text's lines, as written
    result.findings = sorted((_to_cell(f, notebook) for f in result.findings), key=Finding.sort_key)
    result.suppressed = [(_to_cell(f, notebook), how) for f, how in result.suppressed]
    return result


def _python_findings(runtime: Runtime, source: SourceFile, notebook: Notebook, result: FileResult,
                     shell: tuple[Finding, ...] = ()) -> list[Finding]:
    """One parse of all code cells (names flow from cell to cell); when that fails, each cell on
    its own, and only the cells that do not parse are errors."""
    facts = runtime.facts(source)  # a notebook under tests/ is test-only code
    whole = scan_python(source.display, notebook.code, runtime.walker, runtime.catalogue, floor=runtime.floor,
                        hidden=runtime.hidden_codes, gate_extra=shell, facts=facts)
    if not any(error.kind == "parse" for error in whole.errors):
        result.errors.extend(_in_cells(whole.errors, notebook))
        return whole.findings
    findings: list[Finding] = []
    for number, first, code in notebook.cells:
        padded = "\n" * (first - 1) + code  # keep the joined text's line numbers
        part = scan_python(source.display, padded, runtime.walker, runtime.catalogue, floor=runtime.floor,
                           hidden=runtime.hidden_codes, gate_extra=shell, facts=facts)
        findings.extend(part.findings)
        for error in part.errors:
            result.errors.append(FileError(source.display, error.kind, f"cell {number}: {_relative(error.message, first)}"))
    return findings


def _relative(message: str, first: int) -> str:
    return re.sub(r"line (\d+)", lambda m: f"line {int(m.group(1)) - first + 1}", message, count=1)


def _in_cells(errors: list[FileError], notebook: Notebook) -> list[FileError]:
    out = []
    for error in errors:
        match = re.search(r"line (\d+)", error.message)
        if match is not None:
            cell, line = notebook.place(int(match.group(1)))
            message = f"cell {cell}: " + error.message.replace(match.group(0), f"line {line}", 1)
            error = FileError(error.path, error.kind, message)
        out.append(error)
    return out


def _to_cell(finding: Finding, notebook: Notebook) -> Finding:
    """The finding with its lines (and its fix's) counted in its cell."""
    cell, line = notebook.place(finding.line)
    end_cell, end_line = notebook.place(finding.end_line)
    end_column = finding.end_column
    if end_cell != cell:  # a span never leaves its cell
        end_line, end_column = line, finding.column + len(finding.snippet) + 1
    fix = finding.fix
    if fix is not None:
        shift = finding.line - line
        cells = {notebook.place(n)[0] for e in fix.edits for n in (e.line, e.end_line)}
        # A fix's edits are in its finding's cell lines: one that reaches another cell (an import it
        # adds at the top of the first) cannot be written so, and is left out.
        fix = None if cells != {cell} else replace(
            fix, edits=tuple(replace(e, line=e.line - shift, end_line=e.end_line - shift) for e in fix.edits))
        if fix is not None and fix.reason:  # "held back ...: LK603 at 2:1" names the joined text's line
            fix = replace(fix, reason=re.sub(r"\b(\w+) at (\d+):(\d+)", lambda m: "{} at cell {}:{}:{}".format(
                m.group(1), *notebook.place(int(m.group(2))), m.group(3)), fix.reason))
    return replace(finding, line=line, end_line=end_line, end_column=end_column, cell=cell, fix=fix)
