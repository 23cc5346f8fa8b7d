"""`audit server` (issue 18 item 7): the language server, end to end. A real client (pytest-lsp)
starts `python -m auditor server` as a process once for this module and talks LSP to it over
stdio: diagnostics (codes, ranges in UTF-16, severities), changes, code actions applied to the
text, the configuration of the file's folder, bad input, closing, shutdown."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from auditor.report.sarif import HELP_URI

MAX_MB = 0.05  # the server's --max-file-size: 52,428 bytes
# Line 4 has a character outside the BMP before `.cuda()` (two UTF-16 units, one code point) and
# line 3 a "cuda" in a comment (a trap: no diagnostic).
SOURCE = ('import torch as th\nfrom torch.cuda.amp import autocast\n'
          '# move this to cuda later\n'
          'name = "é😀"; x = th.zeros(3).cuda()\n'
          'th.cuda.synchronize()\n'
          'm = th.cuda.max_memory_cached()\n\n'
          'def step(model, x):\n    with autocast():\n        return model(x)\n')
FIXED = ('import torch as th\n'
         '# move this to cuda later\n'
         'name = "é😀"; x = th.zeros(3).cuda()\n'
         'th.cuda.synchronize()\n'
         'm = th.cuda.max_memory_reserved()\n\n'
         'def step(model, x):\n    with th.amp.autocast("cuda", dtype=th.float16):\n        return model(x)\n')
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
on_server = pytest.mark.asyncio(loop_scope="module")  # the tests that talk to the module's server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / ".git").mkdir()  # the configuration search stops here
    (root / "requirements.txt").write_text("torch>=2.7\n", encoding="utf-8")
    (root / "quiet").mkdir()
    (root / "quiet" / "lockin-auditor.toml").write_text('ignore = ["LK205"]\n', encoding="utf-8")
    (root / "typo").mkdir()
    (root / "typo" / "lockin-auditor.toml").write_text('ignroe = ["LK205"]\n', encoding="utf-8")
    return root


def recording_client() -> LanguageClient:
    """pytest-lsp's test client, also keeping every publishDiagnostics in order (its own keeps only
    the last diagnostics per document, and waiting for "the next" notification can miss one)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.published.append(params)  # type: ignore[attr-defined]
        client.diagnostics[params.uri] = params.diagnostics

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, PUBLISH: publish})
    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "auditor", "server", "--max-file-size", str(MAX_MB)],
    client_factory=recording_client))
async def client(lsp_client: LanguageClient, project: Path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=project.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, send: Callable[[], object],
                    version: int | None = None) -> list[types.Diagnostic]:
    """`send()`, then the first diagnostics the server publishes after it for `uri` (at `version`)."""
    seen = len(client.published)  # type: ignore[attr-defined]
    send()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for params in client.published[seen:]:  # type: ignore[attr-defined]
            if params.uri == uri and (version is None or params.version == version):
                return list(params.diagnostics)
        await asyncio.sleep(0.01)
    raise TimeoutError(f"no diagnostics for {uri} (version {version})")


async def opened(client: LanguageClient, path: Path, text: str, language: str = "python") -> list[types.Diagnostic]:
    item = types.TextDocumentItem(path.as_uri(), language, 1, text)
    return await published(client, item.uri, lambda: client.text_document_did_open(
        types.DidOpenTextDocumentParams(item)), 1)


def closed(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))


def by_code(diagnostics: list[types.Diagnostic]) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in diagnostics}


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """The text with LSP edits made (positions in UTF-16 units), last edit first."""
    lines = text.splitlines(keepends=True) + [""]

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[:position.line])
        units = lines[position.line].encode("utf-16-le")[:2 * position.character]
        return before + len(units.decode("utf-16-le"))

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


@on_server
async def test_findings_are_diagnostics_with_code_help_severity_and_utf16_range(client: LanguageClient,
                                                                                project: Path) -> None:
    path = project / "model.py"
    found = by_code(await opened(client, path, SOURCE))
    assert set(found) == {"LK209", "LK102", "LK204", "LK205"}
    assert all(d.range.start.line != 2 for d in found.values())  # the comment's "cuda"
    cuda = found["LK102"]
    # `.cuda()` is at code points 30-36 (1-based) of line 4; 😀 takes two UTF-16 units
    assert (cuda.range.start.line, cuda.range.start.character, cuda.range.end.line, cuda.range.end.character) == \
        (3, 30, 3, 36)
    assert cuda.severity == types.DiagnosticSeverity.Error and found["LK205"].severity == \
        types.DiagnosticSeverity.Warning  # major and minor, as SARIF's levels
    assert cuda.source == "lockin-auditor" and cuda.code_description.href == HELP_URI
    assert "cuda" in cuda.message.lower()
    sync = found["LK204"].range
    assert (sync.start.line, sync.start.character, sync.end.character) == (4, 0, 21)
    closed(client, path)


@on_server
async def test_a_change_updates_the_diagnostics_and_closing_clears_them(client: LanguageClient,
                                                                         project: Path) -> None:
    path = project / "edited.py"
    uri = path.as_uri()
    assert "LK102" in by_code(await opened(client, path, SOURCE))

    def change() -> None:
        for version, text in ((2, SOURCE + "y = 1\n"), (3, SOURCE.replace(".cuda()", ""))):  # debounced: 3 wins
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version, uri),
                [types.TextDocumentContentChangeWholeDocument(text)]))

    assert set(by_code(await published(client, uri, change, 3))) == {"LK209", "LK204", "LK205"}
    assert [p.version for p in client.published if p.uri == uri] == [1, 3]  # version 2 never checked
    assert await published(client, uri, lambda: closed(client, path)) == []


@on_server
async def test_safe_fixes_are_quick_fixes_and_fix_all_gives_the_cli_fix(client: LanguageClient,
                                                                        project: Path) -> None:
    path = project / "fixable.py"
    found = by_code(await opened(client, path, SOURCE))
    ident = types.TextDocumentIdentifier(path.as_uri())

    async def actions(where: types.Range, only: list[str] | None = None) -> list[types.CodeAction]:
        return await client.text_document_code_action_async(types.CodeActionParams(
            ident, where, types.CodeActionContext(diagnostics=[], only=only))) or []

    memory = [a for a in await actions(found["LK205"].range) if a.kind == types.CodeActionKind.QuickFix]
    assert len(memory) == 1 and memory[0].diagnostics[0].code == "LK205"
    fixed = apply(SOURCE, memory[0].edit.changes[path.as_uri()])
    assert fixed == SOURCE.replace("max_memory_cached", "max_memory_reserved")
    # LK102's fix is unsafe (it changes where the tensor goes): not offered without --unsafe-fixes
    assert [a for a in await actions(found["LK102"].range) if a.kind == types.CodeActionKind.QuickFix] == []
    fix_all = await actions(found["LK102"].range, ["source.fixAll"])
    assert [a.kind for a in fix_all] == ["source.fixAll.lockin-auditor"]
    assert apply(SOURCE, fix_all[0].edit.changes[path.as_uri()]) == FIXED
    cli = subprocess.run([sys.executable, "-m", "auditor", "-", "--stdin-filename", str(path), "--fix"],
                         input=SOURCE.encode(), capture_output=True, cwd=project, timeout=120, check=False)
    assert cli.stdout.decode() == FIXED
    closed(client, path)


@on_server
async def test_unsafe_fixes_switched_on_in_the_configuration_are_quick_fixes(client: LanguageClient,
                                                                             project: Path) -> None:
    folder = project / "bold"
    folder.mkdir(exist_ok=True)
    (folder / "lockin-auditor.toml").write_text("unsafe-fixes = true\n", encoding="utf-8")
    path = folder / "model.py"
    found = by_code(await opened(client, path, SOURCE))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(path.as_uri()), found["LK102"].range, types.CodeActionContext(diagnostics=[])))
    assert [a.diagnostics[0].code for a in actions or [] if a.kind == types.CodeActionKind.QuickFix] == ["LK102"]
    closed(client, path)


@on_server
async def test_the_configuration_of_the_files_folder_is_read(client: LanguageClient, project: Path) -> None:
    path = project / "quiet" / "model.py"
    assert set(by_code(await opened(client, path, SOURCE))) == {"LK209", "LK102", "LK204"}  # ignore = LK205
    closed(client, path)


@on_server
async def test_saving_a_configuration_file_checks_the_open_documents_again(client: LanguageClient,
                                                                          project: Path) -> None:
    folder = project / "later"
    folder.mkdir()
    model, config = folder / "model.py", folder / "lockin-auditor.toml"
    assert "LK205" in by_code(await opened(client, model, SOURCE))
    config.write_text('ignore = ["LK205"]\n', encoding="utf-8")
    await opened(client, config, config.read_text(encoding="utf-8"), "toml")
    saved = types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri()))
    again = await published(client, model.as_uri(), lambda: client.text_document_did_save(saved), 1)
    assert "LK205" not in by_code(again) and "LK102" in by_code(await opened(client, folder / "b.py", SOURCE))
    for path in (model, config, folder / "b.py"):
        closed(client, path)


@on_server
async def test_a_configuration_error_is_a_message_not_a_crash(client: LanguageClient, project: Path) -> None:
    path = project / "typo" / "model.py"
    assert await opened(client, path, SOURCE) == []
    assert any("unknown key 'ignroe'" in m.message and m.type == types.MessageType.Error for m in client.messages)
    closed(client, path)
    assert "LK102" in by_code(await opened(client, project / "after_typo.py", SOURCE))  # still serving
    closed(client, project / "after_typo.py")


@pytest.mark.parametrize(("name", "text", "code"), [
    ("broken.py", "import torch\ndef f(:\n    x.cuda()\n", "parse"),
    ("huge.py", "import torch\n" + "x = 1\n" * 10_000 + "y.cuda()\n", "too-large"),
    ("binary.py", "import torch\x00\x00\x01\x02 x.cuda()\n", "binary"),
])
@on_server
async def test_bad_input_is_one_diagnostic_as_the_cli_reports_it(client: LanguageClient, project: Path, name: str,
                                                                 text: str, code: str) -> None:
    shown = await opened(client, project / name, text)
    assert [(str(d.code), d.severity, d.range.start.line) for d in shown] == \
        [(code, types.DiagnosticSeverity.Error, 0)], shown
    closed(client, project / name)


@on_server
async def test_other_kinds_by_file_name(client: LanguageClient, project: Path) -> None:
    requirements = by_code(await opened(client, project / "requirements-gpu.txt",
                                        "numpy\ntorch==2.3.0+cu121\n", "pip-requirements"))
    assert requirements and all(d.range.start.line == 1 for d in requirements.values())
    notebook = json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["cuda in markdown is prose\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import torch\n", "model = torch.nn.Linear(2, 2).cuda()\n"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    found = by_code(await opened(client, project / "train.ipynb", notebook, "json"))
    line = next(i for i, text in enumerate(notebook.splitlines()) if ".cuda()" in text)
    assert set(found) == {"LK102"} and found["LK102"].range.start.line == line
    docker = by_code(await opened(client, project / "Dockerfile", "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n"
                                  "# cuda in a comment\nRUN pip install numpy\n", "dockerfile"))
    assert set(docker) == {"LK509"} and docker["LK509"].range.start.line == 0
    pyproject = by_code(await opened(client, project / "pyproject.toml", '[project]\nname = "x"\n'
                                     'dependencies = ["torch==2.3.0+cu121"]\n', "toml"))
    assert set(pyproject) == {"LK501"} and pyproject["LK501"].range.start.line == 2
    assert await opened(client, project / "README.md", "Runs on cuda.\n", "markdown") == []  # not a kind audit reads
    for name in ("requirements-gpu.txt", "train.ipynb", "Dockerfile", "pyproject.toml", "README.md"):
        closed(client, project / name)


@on_server
async def test_a_path_that_needs_quoting_in_its_uri(client: LanguageClient, project: Path) -> None:
    folder = project / "my models #1"
    folder.mkdir()
    path = folder / "net 2.py"
    assert "LK102" in by_code(await opened(client, path, "import torch\nx = torch.ones(1).cuda()\n"))
    closed(client, path)


@on_server
async def test_messages_about_documents_it_does_not_hold_change_nothing(client: LanguageClient,
                                                                        project: Path) -> None:
    ghost = types.VersionedTextDocumentIdentifier(2, (project / "never_opened.py").as_uri())
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        ghost, [types.TextDocumentContentChangeWholeDocument("x.cuda()\n")]))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(ghost.uri), types.Range(types.Position(0, 0), types.Position(1, 0)),
        types.CodeActionContext(diagnostics=[])))
    assert not actions
    assert "LK102" in by_code(await opened(client, project / "after_ghost.py", SOURCE))  # still serving
    assert all(p.uri != ghost.uri for p in client.published)
    closed(client, project / "after_ghost.py")


def test_a_failing_check_is_a_message_and_no_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.lsp import server

    def broken(*_: object) -> None:
        raise RuntimeError("a rule crashed")

    monkeypatch.setattr(server, "check_document", broken)
    check, shown, failure = server.AuditServer()._check("/tmp/m.py", "x.cuda()\n")
    assert check is None and shown == []
    assert failure == "lockin-auditor: internal error checking /tmp/m.py: RuntimeError: a rule crashed (please report it)"


def test_the_server_exits_cleanly_on_shutdown_and_when_stdin_closes(tmp_path: Path) -> None:
    def message(body: dict) -> bytes:
        data = json.dumps(body).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(data), data)

    initialize = message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    polite = initialize + message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + \
        message({"jsonrpc": "2.0", "method": "exit"})
    for stdin in (polite, initialize):  # shutdown then exit; and stdin simply closing
        run = subprocess.run([sys.executable, "-m", "auditor", "server"], input=stdin, capture_output=True,
                             cwd=tmp_path, timeout=60, check=False)
        assert run.returncode == 0, run.stderr.decode()
        assert b'"id": 1' in run.stdout or b'"id":1' in run.stdout


def test_without_pygls_the_server_is_a_usage_error_and_a_scan_never_loads_it(tmp_path: Path) -> None:
    blocked = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pygls'] = None; "
                              "from auditor.cli import main; sys.exit(main(['server']))"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert blocked.returncode == 2
    assert blocked.stderr.strip().splitlines() == [
        "audit: error: `audit server` needs pygls: install lockin-auditor[server] (pip install "
        "'lockin-auditor[server]')"]
    (tmp_path / "m.py").write_text("import torch\nx.cuda()\n", encoding="utf-8")
    scan = subprocess.run([sys.executable, "-X", "importtime", "-m", "auditor", "m.py", "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert scan.returncode in (0, 1) and "auditor.cli" in scan.stderr
    assert "pygls" not in scan.stderr and "lsprotocol" not in scan.stderr


def test_unsafe_fixes_are_offered_only_when_asked_for(project: Path) -> None:
    from auditor.lsp.check import check_document
    from auditor.lsp.convert import quick_fixes

    check = check_document(str(project / "model.py"), SOURCE)
    everywhere = types.Range(types.Position(0, 0), types.Position(99, 0))
    safe = {a.diagnostics[0].code: a for a in quick_fixes(check, "file:///m.py", everywhere, unsafe=False)}
    every = {a.diagnostics[0].code: a for a in quick_fixes(check, "file:///m.py", everywhere, unsafe=True)}
    assert set(safe) == {"LK205", "LK209"} and set(every) == {"LK205", "LK209", "LK102", "LK204"}
    assert every["LK102"].title.endswith("(unsafe fix)") and not every["LK102"].is_preferred
    moved = apply(SOURCE, every["LK102"].edit.changes["file:///m.py"])
    assert "th.zeros(3).to(th.accelerator.current_accelerator())" in moved
    assert quick_fixes(check, "file:///m.py", everywhere, unsafe=False, only=["source.fixAll"]) == []


def test_positions_count_utf16_units_over_every_line_end() -> None:
    from auditor.lsp.positions import Lines

    lines = Lines("a\r\nb😀c\rd\n")
    assert lines.position(2, 3) == (1, 3)  # after 😀: two units
    assert lines.position(3, 9) == (2, 1)  # clamped to the line's end
    assert lines.position(9, 1) == (3, 0) and lines.end() == (3, 0)


def test_per_file_ignores_of_a_pyproject_apply_to_the_document_path(tmp_path: Path) -> None:
    from auditor.lsp.check import check_document

    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.lockin-auditor]\nper-file-ignores = { "tests/*" = ["LK102"] }\n',
                                             encoding="utf-8")
    source = "import torch\nx = torch.ones(1).cuda()\n"
    assert [f.rule for f in check_document(str(tmp_path / "tests" / "test_a.py"), source).findings] == []
    assert [f.rule for f in check_document(str(tmp_path / "a.py"), source).findings] == ["LK102"]
