"""Running the rules over files: read, prefilter, parse, check, collect."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from auditor.catalogue import Catalogue
from auditor.checks.base import Rule
from auditor.context import FileContext
from auditor.discover import SourceFile, discover
from auditor.model import FileError, FileResult, Finding
from auditor.textio import DEFAULT_MAX_BYTES, SourceError, decode_python, decode_text


@dataclass
class ScanOptions:
    select: list[str] | None = None
    ignore: list[str] | None = None
    respect_gitignore: bool = True
    excludes: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    jobs: int = 1


@dataclass
class ScanResult:
    root: str
    rules: list[Rule]
    files: list[SourceFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_parsed: int = 0
    warnings: list[str] = field(default_factory=list)


class Runtime:
    """Everything a process needs to check files with one rule selection; built once per process."""

    def __init__(self, rules: list[Rule], catalogue: Catalogue, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        from auditor.registry import prefilter_tokens
        from auditor.walker import Walker

        self.rules = rules
        self.catalogue = catalogue
        self.max_bytes = max_bytes
        self.python_rules = [r for r in rules if "python" in r.file_kinds]
        self.walker = Walker(self.python_rules, catalogue)
        self.tokens = prefilter_tokens(self.python_rules, catalogue)
        self.by_kind: dict[str, list[Rule]] = {}
        for rule in rules:
            for kind in rule.file_kinds:
                self.by_kind.setdefault(kind, []).append(rule)

    def may_match(self, data: bytes) -> bool:
        """The prefilter: can this Python file hold a finding at all?"""
        lowered = data.lower()
        return any(token in lowered for token in self.tokens)

    def check(self, source: SourceFile) -> FileResult:
        try:
            return self._check(source)
        except Exception as exc:  # a bug in one rule must not lose the other files' findings
            return FileResult(source.display, errors=[FileError(
                source.display, "internal", f"internal error while checking this file: {type(exc).__name__}: {exc}")])

    def _check(self, source: SourceFile) -> FileResult:
        data, error = read_bytes(source, self.max_bytes)
        if error is not None:
            return FileResult(source.display, errors=[error])
        if source.kind == "python" and not self.may_match(data):
            return FileResult(source.display)
        try:
            text = decode_python(data) if source.kind in ("python", "setup-py") else decode_text(data)
        except SourceError as exc:
            return FileResult(source.display, errors=[FileError(source.display, exc.kind, exc.message)])
        if source.kind in ("python", "setup-py"):
            return self._check_python(source, text)
        ctx = FileContext(source.display, text, self.catalogue, source.kind)
        self._run_file_rules(source.kind, ctx)
        findings = sorted(ctx.findings, key=Finding.sort_key)
        return FileResult(source.display, findings=findings, errors=ctx.errors, parsed=True)

    def _check_python(self, source: SourceFile, text: str) -> FileResult:
        from auditor.python_scan import scan_python

        after_walk = None
        if source.kind == "setup-py":
            def after_walk(ctx: FileContext) -> None:
                self._run_file_rules("setup-py", ctx)
        return scan_python(source.display, text, self.walker, self.catalogue, after_walk)

    def _run_file_rules(self, kind: str, ctx: FileContext) -> None:
        for rule in self.by_kind.get(kind, []):
            rule.check_file(ctx)


def read_bytes(source: SourceFile, max_bytes: int) -> tuple[bytes, FileError | None]:
    try:
        size = os.stat(source.path).st_size
        if size > max_bytes:
            return b"", FileError(source.display, "too-large",
                                  f"file is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit; not scanned")
        with open(source.path, "rb") as handle:
            return handle.read(max_bytes + 1), None
    except OSError as exc:
        kind = "symlink-loop" if exc.errno == 40 else "read"
        return b"", FileError(source.display, kind, f"cannot read: {exc.strerror or exc}")


def resolve_root(paths: list[str]) -> str:
    """Reported paths are relative to this: the one directory given, else the working directory
    when every path is inside it, else the paths' common parent."""
    absolute = [os.path.abspath(p) for p in paths]
    if len(absolute) == 1 and os.path.isdir(absolute[0]):
        return absolute[0]
    cwd = os.getcwd()
    if all(a == cwd or a.startswith(cwd + os.sep) for a in absolute):
        return cwd
    common = os.path.commonpath(absolute)
    return common if os.path.isdir(common) else os.path.dirname(common)


def scan(paths: list[str], options: ScanOptions | None = None) -> ScanResult:
    from auditor.registry import full_catalogue, registry_warnings, select_rules

    options = options or ScanOptions()
    rules = select_rules(options.select, options.ignore)
    root = resolve_root(paths)
    found = discover(paths, root, options.respect_gitignore, options.excludes)
    runtime = Runtime(rules, full_catalogue(), options.max_bytes)
    outcome = ScanResult(root=root, rules=rules, files=found.files, errors=list(found.errors),
                         warnings=list(registry_warnings()))
    for result in (runtime.check(source) for source in found.files):
        outcome.findings.extend(result.findings)
        outcome.errors.extend(result.errors)
        outcome.files_parsed += result.parsed
    outcome.findings.sort(key=Finding.sort_key)
    outcome.errors.sort()
    return outcome
