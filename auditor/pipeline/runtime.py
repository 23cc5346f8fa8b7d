"""The per-process Runtime: everything one process needs to check files with one rule selection,
built once per process (the parent's, inherited by forked workers, or a worker's own).

It reads a file, rules it out when the prefilter or its kind's byte gate says it holds nothing
(auditor.read.source), decodes it, hands it to its kind's check (auditor.pipeline.kind_checks) and
applies the file's suppression comments (auditor.pipeline.postprocess). A warm run served from the
cache never builds one."""

from __future__ import annotations

import os
from dataclasses import replace
from importlib import import_module
from typing import TYPE_CHECKING

from auditor.analysis.project import FileFacts, ProjectInfo
from auditor.cache.keys import digest
from auditor.catalogue import extended
from auditor.checks.registry import build_prefilter, full_catalogue
from auditor.config.keys import DEFAULT_MAX_BYTES
from auditor.discover.kinds import BY_NAME as KINDS_BY_NAME
from auditor.fix.floor import TorchFloor
from auditor.fix.policy import gate_rules
from auditor.model import FileError, FileResult
from auditor.pipeline import postprocess
from auditor.pipeline.kind_checks import check_python
from auditor.pipeline.postprocess import capped, failed_file
from auditor.python.walker import Walker
from auditor.read.source import may_hold_directive, may_hold_findings, needs_check, read_bytes, unchecked_result
from auditor.read.text import SourceError, decode_python, decode_text

if TYPE_CHECKING:
    from collections.abc import Callable

    import libcst as cst

    from auditor.catalogue import Catalogue
    from auditor.checks.base import Rule
    from auditor.config.settings import Settings
    from auditor.context import FileContext
    from auditor.discover.files import SourceFile
    from auditor.fix.device_owner import DeviceOwner


def catalogue_for(settings: Settings | None, checked: tuple[str, ...] | None = None) -> Catalogue:
    """The catalogue plus what the project's configuration adds (in-house packages and modules);
    `checked`: the catalogue check's warnings a cache with the same key kept (the check is skipped)."""
    base = full_catalogue(checked)
    if settings is None or not (settings.packages or settings.modules or settings.portable_modules):
        return base
    return extended(base, settings.packages, settings.modules, settings.portable_modules)


class Runtime:
    """Everything a process needs to check files with one rule selection; built once per process.
    `project` answers what the project says about each file (auditor.analysis.project)."""

    def __init__(self, rules: list[Rule], catalogue: Catalogue, max_bytes: int = DEFAULT_MAX_BYTES,
                 settings: Settings | None = None, floor: TorchFloor | None = None,
                 project: ProjectInfo | None = None, root: str | None = None) -> None:
        self.rules = rules
        self.catalogue = catalogue
        self.max_bytes = max_bytes
        self.settings = settings
        self.floor = floor or TorchFloor()
        # the project's facts are read from the scanned folder, never from the working directory:
        # rooted elsewhere, a package's folders above it (and its tests/ folder) went unseen
        self.project = project if project is not None else ProjectInfo(root or os.getcwd())
        self.root = root  # the scanned folder: includes never read outside it
        # A fix run's device owner (auditor/fix/device_owner.py): with it, the device ties get rewrites.
        self.device_owner: DeviceOwner | None = None
        self.python_rules = [r for r in rules if "python" in r.file_kinds]
        # Rules left out of the selection whose findings still keep a file from being CUDA-clean
        # (auditor/fix/policy.py): they run, their findings only hold fixes back.
        self.hidden = gate_rules(self.python_rules, catalogue)
        self.hidden_codes = frozenset(rule.code for rule in self.hidden)
        self.walker = Walker([*self.python_rules, *self.hidden], catalogue)
        self._checks: dict[str, Callable[[Runtime, SourceFile, str], FileResult]] = {}
        self.prefilter = build_prefilter(self.python_rules, catalogue)
        # Rules with a check_file hook for each kind; Python code is walked, not handed to check_file.
        self.by_kind: dict[str, list[Rule]] = {}
        for rule in rules:
            for kind in rule.file_kinds:
                if kind != "python":
                    self.by_kind.setdefault(kind, []).append(rule)
        self.unused_rule = next((r for r in rules if r.code == postprocess.UNUSED_SUPPRESSION), None)
        self.selected_codes = {r.code for r in rules}
        self.known_codes: dict[str, str] | None = None  # every rule code and name (postprocess)
        # The letters of every rule code ("LK", a plugin's "ACME"): a `noqa:` naming none is not ours.
        self.code_prefixes = tuple(sorted({r.code.rstrip("0123456789").upper() for r in rules} | {"LK"}))

    def facts(self, source: SourceFile) -> FileFacts:
        """What the project says about the file, with the device owner in a fix run."""
        facts = self.project.facts(source.path, source.display)
        if self.device_owner is None or self.root is None:
            return facts
        where = os.path.relpath(os.path.abspath(source.path), os.path.abspath(self.root)).replace(os.sep, "/")
        return replace(facts, device_owner=self.device_owner, root_path=where)

    def may_match(self, data: bytes, path: str = "") -> bool:
        """The prefilter: can this Python file (at `path`, as reported) hold a finding at all?"""
        return self.prefilter(data, path)

    def needs_check(self, source: SourceFile, data: bytes) -> bool:
        """False when the prefilter proves the file holds nothing (its result is empty)."""
        return needs_check(source, data, self.may_match, self.unused_rule is not None)

    def check_with_digest(self, source: SourceFile, hashing: bool,
                          expected: str | None = None) -> tuple[FileResult | None, str | None]:
        """Read and check a file; with `hashing`, also a digest of the bytes checked (for the cache).
        The result is None when the digest equals `expected` (the cached one): nothing to check.
        Whatever goes wrong with this one file (even MemoryError) is this file's error entry."""
        try:
            data, error = read_bytes(source, self.max_bytes)
            if error is not None:
                return FileResult(source.display, errors=[error]), None
            if hashing:
                content = digest(data)
                if content == expected:
                    return None, content
                return self.check_data(source, data), content
            return self.check_data(source, data), None
        except Exception as exc:
            return failed_file(source.display, exc), None

    def check_data(self, source: SourceFile, data: bytes) -> FileResult:
        try:
            return self._check(source, data)
        except Exception as exc:  # a bug in one rule must not lose the other files' findings
            return failed_file(source.display, exc)

    def _check(self, source: SourceFile, data: bytes) -> FileResult:
        # A file the prefilter or its kind's gate rules out holds no finding; it is only read when it
        # may hold suppression comments, which then silence nothing.
        holds_nothing = not may_hold_findings(source, data, self.may_match)
        if holds_nothing and not (self.unused_rule is not None and may_hold_directive(data)):
            return unchecked_result(source, data)
        kind = KINDS_BY_NAME[source.kind]
        if kind.max_bytes is not None and len(data) > kind.max_bytes:
            return FileResult(source.display, errors=[FileError(
                source.display, "too-large", f"file is {len(data) / 1e6:.1f} MB, over the "
                f"{kind.max_bytes / 1e6:.0f} MB limit for a {kind.name} file; not scanned")])
        try:
            text = decode_python(data) if kind.decode == "python" else decode_text(data)
        except SourceError as exc:  # reported whether or not the file could hold a finding (README)
            return FileResult(source.display, errors=[FileError(source.display, exc.kind, exc.message)])
        if holds_nothing:
            result = FileResult(source.display)
            self.suppress(source, text, result)
            return result
        return self.check_text(source, text)

    def check_text(self, source: SourceFile, text: str, module: cst.Module | None = None) -> FileResult:
        """Check decoded text as the file `source` (the fixer checks each round's text this way,
        passing the Python tree it already parsed)."""
        kind = KINDS_BY_NAME[source.kind]
        if module is not None and kind.check == "auditor.pipeline.kind_checks:check_python":
            result = check_python(self, source, text, module)
        else:
            check = self._checks.get(kind.check)
            if check is None:
                where, _, function = kind.check.partition(":")
                check = self._checks[kind.check] = getattr(import_module(where), function)
            result = check(self, source, text)
            if kind.own_suppressions:  # a notebook applies them to its cells' text, then maps the lines
                return capped(result)
        self.suppress(source, text, result)
        return capped(result)

    def suppress(self, source: SourceFile, text: str, result: FileResult) -> None:
        """Apply the file's suppression comments; report those that silence nothing (LK001). See
        auditor.pipeline.postprocess.apply_suppressions."""
        postprocess.apply_suppressions(self, source, text, result)

    def run_file_rules(self, kind: str, ctx: FileContext) -> None:
        """The check_file hooks of the rules that read this kind."""
        for rule in self.by_kind.get(kind, []):
            rule.check_file(ctx)

