"""The auditor's side of the language server: an open document is checked as the file it is, the
way `audit - --stdin-filename PATH` checks standard input (auditor.pipeline.stdin.scan_stdin):
its kind from its name, the configuration and project facts from its folder (found as the CLI
finds them), nothing on disk read for the document itself and no code executed. No LSP types here."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from auditor.config import ConfigError
from auditor.config.load import load_settings
from auditor.model import FileError, Finding
from auditor.pipeline.scan import resolve_root
from auditor.pipeline.stdin import StdinUsage, config_folder, fix_stdin, scan_stdin, stdin_kind

if TYPE_CHECKING:
    from auditor.pipeline.runtime import Runtime
    from auditor.report.model import ScanResult


@dataclass
class DocumentCheck:
    """What checking one version of a document found. `kind` None: not a file audit reads (no
    diagnostics); `config_error`: its configuration is wrong, so nothing was checked."""

    path: str
    text: str
    kind: str | None = None
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    config_error: str | None = None
    result: ScanResult | None = field(default=None, repr=False)
    runtime: Runtime | None = field(default=None, repr=False)


def encoded(text: str) -> bytes:
    """The document's bytes as a file would hold them (UTF-8); a lone surrogate the editor sent
    stays in, so the check reports a decode error rather than the server failing."""
    return text.encode("utf-8", errors="surrogatepass")


def check_document(path: str, text: str, overrides: dict[str, Any] | None = None) -> DocumentCheck:
    """The findings and errors of `text` as the file `path` (which need not exist)."""
    check = DocumentCheck(path, text)
    data = encoded(text)
    try:
        check.kind = stdin_kind(path, data)
    except StdinUsage:
        return check  # not a kind of file audit reads: nothing to say about it
    try:
        settings = load_settings(resolve_root([config_folder(path)]), overrides or {})
        base = os.path.dirname(settings.config_path) if settings.config_path else config_folder(path)
        oversized = len(data) > settings.max_bytes
        check.result, check.runtime = scan_stdin(path, data[:settings.max_bytes], oversized, settings, base)
    except ConfigError as exc:
        check.config_error = str(exc)
        return check
    check.findings, check.errors = list(check.result.findings), list(check.result.errors)
    return check


def fixed_text(check: DocumentCheck, unsafe: bool) -> str | None:
    """The whole document with every applicable fix made (the safe ones, with `unsafe` the unsafe
    ones too), in rounds and validated as `audit --fix -` makes them; None when nothing changes."""
    if check.result is None or check.runtime is None or check.errors:
        return None
    data = encoded(check.text)
    outcome, fixed = fix_stdin(check.result, check.runtime, data, unsafe)
    if outcome.error is not None or fixed == data:
        return None
    return fixed.decode("utf-8", errors="surrogatepass")
