"""`audit - --stdin-filename PATH` (ruff's, an editor's way in): the source comes from standard
input and is checked as if it were the file PATH. Its kind comes from PATH's name, the project
facts and the configuration from PATH's folder, and every report names PATH; PATH itself is never
read, no cache is used, and `--fix` gives the fixed source back instead of writing a file."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO

from auditor.analysis.project import ProjectInfo
from auditor.config import ConfigError
from auditor.discover.files import SourceFile, display_path, file_kind
from auditor.model import FileError, FileResult
from auditor.pipeline import postprocess
from auditor.pipeline.scan import _floor, _layout, resolve_root, validate_rules
from auditor.report.model import ScanResult

if TYPE_CHECKING:
    from auditor.config.settings import Settings
    from auditor.fix.apply import FileFix
    from auditor.pipeline.runtime import Runtime

STDIN = "-"  # the path that means standard input


class StdinUsage(ConfigError):
    """`-` and --stdin-filename used wrongly: a usage error (exit 2, one line)."""


def stdin_request(paths: list[str], filename: str | None) -> str | None:
    """The PATH the standard input stands for, or None for an ordinary run; raises StdinUsage for
    `-` without --stdin-filename, --stdin-filename without `-`, and `-` beside other paths."""
    if STDIN not in paths:
        if filename is not None:
            raise StdinUsage("--stdin-filename names the file standard input stands for; give `-` as the path "
                             "(`audit - --stdin-filename PATH < source`)")
        return None
    if len(paths) > 1:
        raise StdinUsage("`-` (standard input) is the only path of its run; scan the other paths separately")
    if not filename:
        raise StdinUsage("`-` reads the source from standard input: add --stdin-filename PATH to say which file it "
                         "is (its kind, configuration and reported path)")
    return filename


def config_folder(filename: str) -> str:
    """Where the configuration of PATH is found: its folder when that exists, else the working directory."""
    folder = os.path.dirname(os.path.abspath(filename))
    return folder if os.path.isdir(folder) else os.getcwd()


def read_stdin(stream: BinaryIO, max_bytes: int) -> tuple[bytes, bool]:
    """At most `max_bytes` of the stream, and whether it held more (then it is not checked)."""
    data = stream.read(max_bytes + 1)
    return data[:max_bytes], len(data) > max_bytes


def stdin_kind(filename: str, data: bytes) -> str:
    """The kind PATH's name gives (a name without a suffix: a Python script by its shebang)."""
    kind = file_kind(filename, explicit=True)
    if kind is None and "." not in os.path.basename(filename):
        first = data.split(b"\n", 1)[0]
        kind = "python" if first.startswith(b"#!") and b"python" in first else None
    if kind is None:
        raise StdinUsage(f"--stdin-filename {filename}: not a kind of file audit reads (Python, requirements, "
                         f"pyproject.toml, setup.cfg, Dockerfile, notebook, CUDA); name the file it stands for")
    return kind


def scan_stdin(filename: str, data: bytes, oversized: bool, settings: Settings, base: str) -> tuple[ScanResult,
                                                                                                   Runtime]:
    """The scan of `data` as the file `filename`, with paths reported relative to `base`."""
    # the rules and libcst: checking stdin always checks
    from auditor.checks.registry import registry_warnings
    from auditor.pipeline.runtime import Runtime, catalogue_for
    from auditor.python.scan import unvalidated_parsing

    absolute = os.path.abspath(filename)
    scan_root = resolve_root([config_folder(filename)])
    source = SourceFile(absolute, display_path(absolute, base), stdin_kind(filename, data))
    validate_rules(settings)
    floor = _floor(scan_root, settings)
    outcome = ScanResult(root=base, files=[source], errors=[], skipped=[], scan_root=scan_root, settings=settings,
                         select=settings.effective_select, ignore=settings.effective_ignore, floor=floor)
    runtime = Runtime(outcome.rules, catalogue_for(settings), settings.max_bytes, settings, floor,
                      ProjectInfo(scan_root), root=scan_root)
    outcome.warnings.extend(registry_warnings())
    if oversized:
        result = FileResult(source.display, errors=[FileError(
            source.display, "too-large", f"standard input is over the {settings.max_bytes / 1e6:.1f} MB limit "
            f"(--max-file-size); not scanned")])
    else:
        with unvalidated_parsing():
            result = runtime.check_data(source, data)
    outcome.files_parsed += result.parsed
    postprocess.collect(outcome, [result], None, settings)
    outcome.layout = _layout(scan_root, [source], settings)
    return outcome, runtime


def fix_stdin(result: ScanResult, runtime: Runtime, data: bytes, unsafe: bool) -> tuple[FileFix, bytes]:
    """The fixes of the stdin source, as --fix would make them in the file: what it did, and the
    fixed bytes (the input unchanged when nothing applies or a fix is refused)."""
    # the fixer: only --fix and --diff
    from auditor.fix.applicability import fixable
    from auditor.fix.apply import FIXABLE_KINDS, PYTHON_KINDS, FileFix, _encoded, _fix_data
    from auditor.python.scan import unvalidated_parsing
    from auditor.sandbox.safe_files import WriteRefused

    source = result.files[0]
    outcome = FileFix(source.display)
    if source.kind not in FIXABLE_KINDS or not any(fixable(f, unsafe) for f in result.findings):
        return outcome, data
    try:
        with unvalidated_parsing():  # the checks parse as the scan does; validation happens in the rounds
            _fix_data(runtime, source, outcome, data, unsafe)
        return outcome, _encoded(outcome, data, source.kind in PYTHON_KINDS) if outcome.changed else data
    except WriteRefused as exc:
        outcome.error = FileError(source.display, "fix", f"not fixed: {exc}")
        outcome.fixed = outcome.original
        return outcome, data
