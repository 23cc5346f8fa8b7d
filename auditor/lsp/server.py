"""The pygls language server behind `audit server` (stdio, full document sync).

A document is checked when it is opened or saved, and DEBOUNCE seconds after the last change
(typing does not start a check per key). Checks run one at a time in a worker thread, so the
server keeps reading messages; a result is published only if the document is still open and at
the version that was checked. Saving a configuration file checks every open document again. A
configuration error is shown once (window/showMessage) until it changes; no input and no failure
of a check stops the server. Closing a document clears its diagnostics. When stdin closes (or after shutdown and exit) the process ends."""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from auditor import __version__
from auditor.config.files import CONFIG_NAMES
from auditor.lsp import SOURCE, convert
from auditor.lsp.check import DocumentCheck, check_document, fixed_text

DEBOUNCE = 0.15  # seconds after the last change before a check starts
logger = logging.getLogger(__name__)


class AuditServer(LanguageServer):
    def __init__(self, unsafe_fixes: bool = False, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.unsafe_fixes = unsafe_fixes
        self.overrides = overrides or {}
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="audit-check")
        self.pending: dict[str, asyncio.Task] = {}
        self.checks: dict[str, DocumentCheck] = {}  # the last published check of each open document
        self.shown_error: str | None = None

    def schedule(self, uri: str, delay: float) -> None:
        """Check the document after `delay` seconds, replacing a check still waiting for it."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._check_later(uri, delay))

    async def _check_later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        document = self.document(uri)
        path = to_fs_path(uri)
        if document is None or path is None:
            return
        version, text = document.version, document.source
        check, shown, failure = await asyncio.get_running_loop().run_in_executor(self.worker, self._check, path, text)
        current = self.document(uri)
        if current is None or current.version != version:
            return  # closed meanwhile, or changed: a newer check comes
        self.pending.pop(uri, None)
        if check is None:
            self._show(failure or f"{SOURCE}: {path} could not be checked")
            return
        self.checks[uri] = check
        self._report_config(check.config_error)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, shown, version))

    def document(self, uri: str) -> Any:
        """The open document (its text as the editor holds it), or None: never pygls's
        get_text_document, which reads a document it does not hold from the disk."""
        return self.workspace.text_documents.get(unquote(uri))

    def _check(self, path: str, text: str) -> tuple[DocumentCheck | None, list[types.Diagnostic], str | None]:
        """The check and its diagnostics (in the worker thread), or what failed: never raised."""
        try:
            check = check_document(path, text, self.overrides)
            return check, [d for _, d in convert.diagnostics(check)], None
        except Exception as exc:  # a bug in the auditor must not stop the editor's server
            logger.exception("checking %s failed", path)
            return None, [], f"{SOURCE}: internal error checking {path}: {type(exc).__name__}: {exc} (please report it)"

    def _report_config(self, error: str | None) -> None:
        if error is not None and error != self.shown_error:
            self._show(f"{SOURCE}: {error}")
        self.shown_error = error

    def _show(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))

    def _fixed(self, check: DocumentCheck) -> str | None:
        try:
            return fixed_text(check, self._unsafe(check))
        except Exception:  # a fixer bug costs the fix-all action, not the server
            logger.exception("fixing %s failed", check.path)
            return None

    def _unsafe(self, check: DocumentCheck) -> bool:
        """Unsafe fixes on: `--unsafe-fixes`, the editor's `unsafeFixes`, or the file's configuration."""
        return self.unsafe_fixes or bool(check.result is not None and check.result.settings.unsafe_fixes)

    def close(self, uri: str) -> None:
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.checks.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri, only = params.text_document.uri, params.context.only
        check = self.checks.get(uri)
        document = self.document(uri)
        if check is None or document is None or check.text != document.source:
            return []  # no check of this text yet: edits would land on the wrong text
        actions = convert.quick_fixes(check, uri, params.range, self._unsafe(check), only)
        if convert.wants_fix_all(only):
            fixed = await asyncio.get_running_loop().run_in_executor(self.worker, self._fixed, check)
            if fixed is not None:
                actions.append(convert.fix_all_action(check, uri, fixed))
        return actions


def build_server(unsafe_fixes: bool = False, overrides: dict[str, Any] | None = None) -> AuditServer:
    server = AuditServer(unsafe_fixes, overrides)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AuditServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("unsafeFixes"), bool):
            ls.unsafe_fixes = options["unsafeFixes"]

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AuditServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AuditServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AuditServer, params: types.DidSaveTextDocumentParams) -> None:
        saved = params.text_document.uri
        # a saved configuration file may change every open document's findings
        configuration = os.path.basename(to_fs_path(saved) or "") in CONFIG_NAMES
        for uri in (list(ls.checks) if configuration else []) + [saved]:
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AuditServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, convert.FIX_ALL]))
    async def code_action(ls: AuditServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.code_actions(params)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AuditServer, *_: Any) -> None:
        for waiting in ls.pending.values():
            waiting.cancel()
        ls.worker.shutdown(wait=False, cancel_futures=True)

    return server


def serve(unsafe_fixes: bool = False, overrides: dict[str, Any] | None = None) -> int:
    """Run the server on stdin and stdout until the client exits or stdin closes."""
    server = build_server(unsafe_fixes, overrides)
    server.start_io()
    server.worker.shutdown(wait=False, cancel_futures=True)
    return 0
