"""Findings, file errors and fixes as LSP diagnostics and code actions (lsprotocol types).

- a diagnostic's `code` is the rule code, `codeDescription.href` the rule's help page (SARIF's
  `helpUri`), `source` "lockin-auditor", its severity SARIF's level of ours (blocker and major:
  Error, minor: Warning, info: Information);
- a file that could not be checked (a parse error, too large, binary) is one diagnostic on its
  first line, its code the error's kind, as the CLI reports it;
- a notebook opened as text (the `.ipynb` JSON) gets its findings on the JSON lines that hold
  their source (auditor.report.notebook_lines), else on its first line;
- a finding's applicable fix is a quickfix of its plain edits (Python and text files; a notebook's
  edits are in cell lines, so it only gets the fix-all action, the whole document rewritten)."""

from __future__ import annotations

from lsprotocol import types

from auditor.fix.applicability import fixable
from auditor.lsp import SOURCE
from auditor.lsp.check import DocumentCheck
from auditor.lsp.positions import Lines
from auditor.model import FileError, Finding
from auditor.report.notebook_lines import NotebookPlaces
from auditor.report.sarif import HELP_URI, LEVELS

SEVERITIES = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
              "note": types.DiagnosticSeverity.Information}
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"


def _range(lines: Lines, line: int, column: int, end_line: int, end_column: int) -> types.Range:
    start = types.Position(*lines.position(line, column))
    end = types.Position(*lines.position(end_line, end_column))
    return types.Range(start, end if (end.line, end.character) >= (start.line, start.character) else start)


def finding_range(finding: Finding, lines: Lines, notebook: NotebookPlaces | None) -> types.Range:
    if finding.cell is None:
        return _range(lines, finding.line, finding.column, finding.end_line, finding.end_column)
    region = notebook.region(finding) if notebook is not None else None
    if region is None:
        return _range(lines, 1, 1, 1, 1)
    return _range(lines, region.line, region.column, region.end_line, region.end_column)


def diagnostic(finding: Finding, where: types.Range) -> types.Diagnostic:
    return types.Diagnostic(
        range=where, message=finding.message, severity=SEVERITIES[LEVELS.get(finding.severity, "warning")],
        code=finding.rule, code_description=types.CodeDescription(href=HELP_URI), source=SOURCE)


def error_diagnostic(error: FileError, lines: Lines) -> types.Diagnostic:
    first = types.Range(types.Position(0, 0), types.Position(*lines.position(1, 1 << 30)))
    return types.Diagnostic(range=first, message=error.message, severity=types.DiagnosticSeverity.Error,
                            code=error.kind, source=SOURCE)


def _notebook(check: DocumentCheck) -> NotebookPlaces | None:
    if check.kind != "notebook" or not check.findings:
        return None
    return NotebookPlaces.of_text(check.findings[0].path, check.text)


def diagnostics(check: DocumentCheck) -> list[tuple[Finding | None, types.Diagnostic]]:
    """Every diagnostic of the check, each with the finding it stands for (None for an error)."""
    lines, notebook = Lines(check.text), _notebook(check)
    out: list[tuple[Finding | None, types.Diagnostic]] = [(None, error_diagnostic(e, lines)) for e in check.errors]
    out += [(f, diagnostic(f, finding_range(f, lines, notebook))) for f in check.findings]
    return out


def _touches(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)


def quick_fixes(check: DocumentCheck, uri: str, asked: types.Range, unsafe: bool,
                only: list[str] | None = None) -> list[types.CodeAction]:
    """The applicable fixes of the findings whose range meets `asked`, one quickfix each."""
    if not _wanted(types.CodeActionKind.QuickFix.value, only):
        return []
    lines, actions = Lines(check.text), []
    for finding, shown in diagnostics(check):
        if finding is None or finding.cell is not None or not fixable(finding, unsafe) or not _touches(shown.range,
                                                                                                      asked):
            continue
        fix = finding.fix
        assert fix is not None  # fixable() says so
        edits = [types.TextEdit(_range(lines, e.line, e.column, e.end_line, e.end_column), e.content)
                 for e in fix.edits]
        title = f"{finding.rule}: {fix.message}" + (" (unsafe fix)" if fix.applicability == "unsafe" else "")
        actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[shown],
                                        edit=types.WorkspaceEdit(changes={uri: edits}),
                                        is_preferred=fix.applicability == "safe"))
    return actions


def fix_all_action(check: DocumentCheck, uri: str, fixed: str) -> types.CodeAction:
    """One edit replacing the whole document with its fixed text."""
    whole = types.Range(types.Position(0, 0), types.Position(*Lines(check.text).end()))
    return types.CodeAction(title=f"{SOURCE}: fix all auto-fixable problems", kind=FIX_ALL,
                            edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(whole, fixed)]}))


def wants_fix_all(only: list[str] | None) -> bool:
    return _wanted(FIX_ALL, only)
