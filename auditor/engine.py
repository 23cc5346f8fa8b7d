"""Running the rules over files: read, prefilter, parse, check, collect."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING

from auditor.config import ConfigError, Settings, nearest
from auditor.discover import Discovery, SourceFile, discover, tree_unchanged
from auditor.kinds import BY_NAME as KINDS_BY_NAME
from auditor.model import MAX_FINDINGS_PER_FILE, OMITTED, FileError, FileResult, Finding, omitted_error
from auditor.textio import DEFAULT_MAX_BYTES, SourceError, decode_python, decode_text, read_regular_file, text_problem

if TYPE_CHECKING:  # imported lazily: a run served from the cache never loads libcst or the rules
    from collections.abc import Callable

    import libcst as cst

    from auditor.analysis.project import ProjectInfo
    from auditor.cache import Cache
    from auditor.catalogue import Catalogue
    from auditor.checks.base import Rule
    from auditor.context import FileContext
    from auditor.fix.floor import TorchFloor
    from auditor.parallel import Task
    from auditor.prefilter import Prefilter
    from auditor.progress import Progress


ScanOptions = Settings  # the name callers used before the settings had a module of their own
UNUSED_SUPPRESSION = "LK001"  # the rule that reports suppressions silencing nothing


@dataclass
class ScanResult:
    root: str  # the folder reported paths are relative to: the working directory
    files: list[SourceFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Findings a comment or per-file-ignores silenced, with how: inline, file, per-file-ignores.
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # paths named but not read, and why
    scan_root: str = ""  # the folder scanned (the common folder of the paths given)
    settings: Settings = field(default_factory=Settings, repr=False)
    files_parsed: int = 0  # parsed in this run (files served from the cache are not counted)
    files_cached: int = 0  # results reused from the cache
    warnings: list[str] = field(default_factory=list)
    select: list[str] | None = None
    ignore: list[str] | None = None
    selected: list[Rule] | None = field(default=None, repr=False)
    floor: TorchFloor | None = None  # the project's torch floor the fixes were judged against

    @property
    def rules(self) -> list[Rule]:
        """The selected rules, loaded on first use (a warm run does not need them)."""
        if self.selected is None:
            from auditor.registry import select_rules

            self.selected = select_rules(self.select, self.ignore)
        return self.selected


class Runtime:
    """Everything a process needs to check files with one rule selection; built once per process.
    `project` answers what the project says about each file (auditor.analysis.project)."""

    def __init__(self, rules: list[Rule], catalogue: Catalogue, max_bytes: int = DEFAULT_MAX_BYTES,
                 settings: Settings | None = None, floor: TorchFloor | None = None,
                 project: ProjectInfo | None = None, root: str | None = None) -> None:
        from auditor.analysis.project import ProjectInfo
        from auditor.fix.floor import TorchFloor
        from auditor.fix.policy import gate_rules
        from auditor.registry import build_prefilter
        from auditor.walker import Walker

        self.rules = rules
        self.catalogue = catalogue
        self.max_bytes = max_bytes
        self.settings = settings
        self.floor = floor or TorchFloor()
        self.project = project if project is not None else ProjectInfo(os.getcwd())
        self.root = root  # the scanned folder: includes never read outside it
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
        self.unused_rule = next((r for r in rules if r.code == UNUSED_SUPPRESSION), None)
        self.selected_codes = {r.code for r in rules}
        self._known: dict[str, str] | None = None
        # The letters of every rule code ("LK", a plugin's "ACME"): a `noqa:` naming none is not ours.
        self.code_prefixes = tuple(sorted({r.code.rstrip("0123456789").upper() for r in rules} | {"LK"}))

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
                from auditor.cache import digest

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
        if module is not None and kind.check == "auditor.engine:check_python":
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
        """Apply the file's suppression comments, in its kind's comment syntax (auditor.kinds); report
        those that silence nothing (LK001)."""
        from auditor import suppress

        kind = KINDS_BY_NAME[source.kind]
        if kind.comment is None:  # JSON: no comments, nothing to apply
            return
        directives = suppress.find_directives(text, kind.comment, kind.python, self.code_prefixes)
        if not directives:
            return
        applied = suppress.apply(result.findings, directives, kind.suppress_above)
        result.findings, result.suppressed = applied.kept, applied.suppressed
        if self.unused_rule is None or any(error.kind == OMITTED for error in result.errors):
            return  # with findings not kept, a directive silencing nothing kept may silence one of them
        from auditor.context import FileContext
        from auditor.model import Edit, Fix

        ctx = FileContext(source.display, text, self.catalogue, source.kind, self.project.facts(source.path, source.display))
        # An item naming LK001 itself is not judged: it is used exactly when it silences what this pass reports.
        judged = self.selected_codes - {UNUSED_SUPPRESSION}
        for problem in suppress.problems(directives, ctx.lines, self._known_code, judged.__contains__, self._suggest):
            column, end_column, replacement = problem.removal
            fix = Fix("safe", "Remove the unused suppression",
                      (Edit(problem.line, column, problem.line, end_column, replacement),))
            finding = ctx.make_finding(self.unused_rule, problem.line, problem.column, problem.line,
                                       problem.end_column, {"problem": problem.message})
            ctx.findings.append(replace(finding, fix=fix))
        if ctx.findings:
            # Only a directive that names LK001 silences these: an unused catch-all would hide itself.
            naming = [d for d in directives if d.items is not None]
            again = suppress.apply(ctx.findings, naming)
            result.findings = sorted([*result.findings, *again.kept], key=Finding.sort_key)
            result.suppressed.extend(again.suppressed)

    def _known_code(self, item: str) -> str | None:
        if self._known is None:
            from auditor.registry import all_rules

            self._known = {}
            for rule in all_rules():
                self._known[rule.code.lower()] = rule.code
                self._known[rule.name] = rule.code
        return self._known.get(item.lower())

    def _suggest(self, item: str) -> str:
        from auditor.registry import all_rules

        return nearest(item, [r.code for r in all_rules()] + [r.name for r in all_rules()])

    def run_file_rules(self, kind: str, ctx: FileContext) -> None:
        """The check_file hooks of the rules that read this kind."""
        for rule in self.by_kind.get(kind, []):
            rule.check_file(ctx)


def capped(result: FileResult) -> FileResult:
    """At most MAX_FINDINGS_PER_FILE findings per file whatever made them (the contexts cap each
    part of a file; a notebook joins two), the rest counted in an error entry."""
    if len(result.findings) <= MAX_FINDINGS_PER_FILE:
        return result
    from collections import Counter

    rest = Counter(f.rule for f in result.findings[MAX_FINDINGS_PER_FILE:])
    result.findings = result.findings[:MAX_FINDINGS_PER_FILE]
    result.errors = [*result.errors, omitted_error(result.path, dict(rest))]
    return result


def failed_file(path: str, exc: Exception) -> FileResult:
    """The error entry of a file whose check raised: the run and the other files go on."""
    if isinstance(exc, RecursionError):  # a reader (TOML, JSON, YAML) recursing once per level of nesting
        return FileResult(path, errors=[FileError(path, "parse", "nested too deeply to read; not scanned")])
    if isinstance(exc, MemoryError):  # the worker's memory backstop, or the machine's
        return FileResult(path, errors=[FileError(path, "crash", "ran out of memory while checking this file; "
                                                                  "not scanned")])
    return FileResult(path, errors=[FileError(
        path, "internal", f"internal error while checking this file: {type(exc).__name__}: {exc}")])


def check_python(runtime: Runtime, source: SourceFile, text: str, module: cst.Module | None = None) -> FileResult:
    """A Python file: one parse, one walk; file-level rules of its kind (setup.py) share the tree.
    `module`: the text's tree when the caller has it (the fixer)."""
    from auditor.python_scan import scan_python

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
    return FileResult(source.display, findings=sorted(ctx.findings, key=Finding.sort_key), errors=ctx.result_errors(),
                      parsed=True)


_DIRECTIVE_BYTES = re.compile(rb"noqa:[^\n]*\bLK\d")


def may_hold_directive(data: bytes) -> bool:
    """Whether a file may hold one of our suppression comments (fast byte tests first)."""
    return b"lockin" in data or (b"noqa" in data and _DIRECTIVE_BYTES.search(data) is not None)


def may_hold_findings(source: SourceFile, data: bytes, may_match: Callable[[bytes, str], bool]) -> bool:
    """Whether the file can hold a finding: the Python prefilter for the kinds it applies to, the
    kind's byte gate (auditor.kinds) for the rest; kinds with neither are always read."""
    kind = KINDS_BY_NAME.get(source.kind)
    if kind is None:  # a file list from another version: nothing to read it with
        return False
    if kind.python_prefilter and may_match(data, source.display):
        return True
    if kind.gate is None:
        return not kind.python_prefilter
    lowered = data.lower()
    return any(word in lowered for word in kind.gate)


def needs_check(source: SourceFile, data: bytes, may_match: Callable[[bytes, str], bool],
                directives: bool = False) -> bool:
    """Whether to read the file: it may hold a finding, or (with `directives`: the unused-suppression
    rule runs) a suppression comment of ours."""
    return may_hold_findings(source, data, may_match) or (
        directives and source.kind in KINDS_BY_NAME and may_hold_directive(data))


def unchecked_result(source: SourceFile, data: bytes) -> FileResult:
    """A file the prefilter rules out holds no finding; it is still an error entry when it is not
    text that decodes (a UTF-16 or binary `.py`), as the README promises."""
    kind = KINDS_BY_NAME.get(source.kind)
    problem = text_problem(data, python=kind is not None and kind.decode == "python")
    if problem is None:
        return FileResult(source.display)
    return FileResult(source.display, errors=[FileError(source.display, problem.kind, problem.message)])


def read_bytes(source: SourceFile, max_bytes: int) -> tuple[bytes, FileError | None]:
    """The file's bytes: only a regular file, never through a symbolic link (discovery resolved
    the links it accepts), never more than `max_bytes`."""
    try:
        return read_regular_file(source.path, max_bytes), None
    except SourceError as exc:
        return b"", FileError(source.display, exc.kind, exc.message)


def resolve_root(paths: list[str]) -> str:
    """The folder a scan is about (its cache and configuration are found from it): the one
    directory given, else the working directory when every path is inside it, else the paths'
    common parent."""
    absolute = [os.path.abspath(p) for p in paths]
    if len(absolute) == 1 and os.path.isdir(absolute[0]):
        return absolute[0]
    cwd = os.getcwd()
    if all(a == cwd or a.startswith(cwd + os.sep) for a in absolute):
        return cwd
    common = os.path.commonpath(absolute)
    return common if os.path.isdir(common) else os.path.dirname(common)


def scan(paths: list[str], options: Settings | None = None, base: str | None = None) -> ScanResult:
    """Discover, then reuse cached results, prefilter and check the rest (over processes when
    it pays); findings and errors come back sorted, the same however the work was split.
    Reported paths are relative to `base`: the CLI passes the working directory (ruff's way); the
    default is the scanned folder."""
    settings = options or Settings()
    scan_root = resolve_root(paths)
    base = os.path.abspath(base) if base is not None else scan_root
    floor = _floor(scan_root, settings)
    cache = None
    if settings.cache:
        from auditor.cache import open_cache

        cache = open_cache(scan_root, settings.cache_dir, settings.effective_select, settings.effective_ignore,
                           settings.max_bytes, display_base=base, extra=_cache_extra(settings, floor))
    validate_rules(settings, cache)
    found = _discover(paths, base, settings, cache)
    outcome = ScanResult(root=base, files=found.files, errors=list(found.errors), skipped=found.skipped,
                         scan_root=scan_root, settings=settings,
                         select=settings.effective_select, ignore=settings.effective_ignore, floor=floor)
    whole = cache is not None and len(paths) == 1 and os.path.abspath(paths[0]) == cache.project
    scanner = _Scan(found.files, settings, cache, outcome, whole, _project_info(paths, scan_root, found, cache))
    results = scanner.run()
    for result in results:
        outcome.findings.extend(result.findings)
        outcome.errors.extend(result.errors)
        outcome.suppressed.extend(result.suppressed)
    # A file included by two requirement files reports its findings once.
    from auditor.analysis.crossfile import link_kernel_sources

    outcome.findings = sorted(link_kernel_sources(list(set(outcome.findings))), key=Finding.sort_key)
    if outcome.findings:
        from auditor.alternatives import with_alternatives

        outcome.findings = with_alternatives(outcome.findings, scanner.served)
    outcome.errors.sort()
    _apply_settings(outcome, settings)
    return outcome


def _apply_settings(outcome: ScanResult, settings: Settings) -> None:
    """What the settings do to findings after the cache: per-file-ignores and severity overrides
    (cheap, and changing them must not invalidate the cached results)."""
    if settings.per_file_ignores:
        from auditor.suppress import per_file_ignored

        kept = []
        absolute: dict[str, str] = {}
        for finding in outcome.findings:
            path = absolute.get(finding.path)
            if path is None:
                path = absolute[finding.path] = os.path.normpath(os.path.join(outcome.root, finding.path))
            if per_file_ignored(finding.path, finding.rule, finding.name, settings.per_file_ignores, path):
                outcome.suppressed.append((finding, "per-file-ignores"))
            else:
                kept.append(finding)
        outcome.findings = kept
    if settings.severity:
        levels = {key.lower(): level for key, level in settings.severity}
        outcome.findings = [_with_severity(f, levels) for f in outcome.findings]
        outcome.suppressed = [(_with_severity(f, levels), how) for f, how in outcome.suppressed]
    outcome.suppressed.sort(key=lambda item: item[0].sort_key())


def _with_severity(finding: Finding, levels: dict[str, str]) -> Finding:
    level = levels.get(finding.rule.lower()) or levels.get(finding.name)
    return finding if level is None or level == finding.severity else replace(finding, severity=level)


def validate_rules(settings: Settings, cache: Cache | None = None) -> None:
    """Every rule a setting names must exist: exit 2 naming it and the nearest spelling. The
    codes come from the cache when it has them (a warm run then loads no rule module)."""
    wanted: list[tuple[str, str]] = [(s, "select") for s in settings.select or ()]
    wanted += [(s, "extend-select") for s in settings.extend_select]
    wanted += [(s, "ignore") for s in settings.ignore or ()]
    wanted += [(s, "per-file-ignores") for _, selectors in settings.per_file_ignores for s in selectors]
    exact = [(key, "severity") for key, _ in settings.severity]
    exact += [(entry.rule, "catalogue") for entry in (*settings.packages, *settings.modules)]
    if not wanted and not exact:
        return
    codes, names = _known_rules(cache)
    for selector, key in wanted:
        s = selector.strip()
        if s.upper() == "ALL" or s.lower() in names or any(code.upper().startswith(s.upper()) for code in codes):
            continue
        raise ConfigError(f"unknown rule or prefix {selector!r} in {_where(settings, key)}"
                          f"{nearest(selector, [*codes, *names])}; see `audit rules`")
    for name, key in exact:
        if name.upper() in codes or name.lower() in names:
            continue
        raise ConfigError(f"unknown rule {name!r} in {_where(settings, key)}{nearest(name, [*codes, *names])}; "
                          f"see `audit rules`")


def _where(settings: Settings, key: str) -> str:
    origin = settings.origin(key)
    return origin if origin.startswith("--") else f"{origin} `{key}`"


def _known_rules(cache: Cache | None) -> tuple[set[str], set[str]]:
    saved = cache.meta.get("known") if cache is not None else None
    if isinstance(saved, list) and len(saved) == 2:
        return set(saved[0]), set(saved[1])
    from auditor.registry import all_rules

    codes = sorted(rule.code for rule in all_rules())
    names = sorted(rule.name for rule in all_rules())
    if cache is not None:
        cache.meta["known"] = [codes, names]
        cache.dirty = True
    return set(codes), set(names)


def catalogue_for(settings: Settings | None) -> Catalogue:
    """The catalogue plus what the project's configuration adds (in-house packages and modules)."""
    from auditor.registry import full_catalogue

    base = full_catalogue()
    if settings is None or not (settings.packages or settings.modules or settings.portable_modules):
        return base
    from auditor.catalogue import extended

    return extended(base, settings.packages, settings.modules, settings.portable_modules)


def _floor(scan_root: str, settings: Settings) -> TorchFloor:
    """The project's torch floor, read before any file is checked: it is part of the cache key.
    --torch-version or the configuration's `torch-version` override the dependency files."""
    from auditor.cache import cache_location
    from auditor.fix.floor import resolve_floor

    project, directory = cache_location(scan_root, settings.cache_dir)
    return resolve_floor(project, settings.torch_version, settings.origin("torch-version"),
                         memo_dir=directory if settings.cache else None)


def _cache_extra(settings: Settings, floor: TorchFloor) -> dict | None:
    extra = settings.cache_extra()
    if floor.key() is None:
        return extra
    return {**(extra or {}), "torch_floor": floor.key()}


def _discover(paths: list[str], root: str, options: Settings, cache: Cache | None) -> Discovery:
    """Discovery, reused from the cache when no folder it listed (nor ignore file it read) changed:
    a warm run over a large tree then stats its folders instead of listing them."""
    if cache is None or len(paths) != 1 or not os.path.isdir(paths[0]):  # files are cheap to find
        return discover(paths, root, options.respect_gitignore, options.excludes, force_exclude=options.force_exclude)
    key = [os.path.abspath(paths[0]), root, options.respect_gitignore, list(options.excludes)]
    saved = cache.meta.get("tree")
    try:
        if isinstance(saved, dict) and saved.get("key") == key and tree_unchanged(saved["stamps"]):
            return Discovery(files=[SourceFile(path, display, kind) for path, display, kind in saved["files"]])
    except (KeyError, TypeError, ValueError):  # not what this version writes: walk again
        pass
    found = discover(paths, root, options.respect_gitignore, options.excludes, stamp=True)
    # A folder changed within the mtime granularity of now could change again unseen ("racy git").
    if found.stamps is not None and all(cache.settled(mtime) for _, _, mtime in found.stamps):
        cache.meta["tree"] = {"key": key, "stamps": found.stamps,
                              "files": [[f.path, f.display, f.kind] for f in found.files]}
        cache.dirty = True
    elif saved is not None:
        cache.meta.pop("tree", None)
        cache.dirty = True
    return found


def _project_info(paths: list[str], root: str, found: Discovery, cache: Cache | None) -> ProjectInfo:
    """What the project says about each file (auditor.analysis.project). With the cached file list
    (whose folder stamps vouch for every listing) and unchanged project files, the per-folder
    cache keys of the last run are reused instead of recomputed."""
    from auditor.analysis.project import ProjectInfo

    walked = all(os.path.isdir(p) for p in paths)  # a directory walk lists every folder it reports
    project = ProjectInfo(root, [f.path for f in found.files] if walked else None)
    tree = cache.meta.get("tree") if cache is not None else None
    if not walked or not isinstance(tree, dict):
        return project
    saved = cache.meta.get("facts")  # type: ignore[union-attr]
    if isinstance(saved, dict) and saved.get("key") == tree.get("key") and project.preset(saved):
        return project
    for source in found.files:  # the scan asks for every key anyway
        project.key(source.path, source.display)
    cache.meta["facts"] = {"key": tree.get("key"), **project.export()}  # type: ignore[union-attr]
    cache.dirty = True  # type: ignore[union-attr]
    return project


class _Scan:
    """One scan's bookkeeping: cache hits first, then the prefilter, then the candidates."""

    def __init__(self, files: list[SourceFile], options: Settings, cache: Cache | None, outcome: ScanResult,
                 whole_project: bool = False, project: ProjectInfo | None = None) -> None:
        from auditor.analysis.project import ProjectInfo

        self.files = files
        self.whole_project = whole_project
        self.project = project if project is not None else ProjectInfo(outcome.root)
        self.options = options
        self.cache = cache
        self.outcome = outcome
        self.results: list[FileResult | None] = [None] * len(files)
        self._fact_keys: list[str | None] = [None] * len(files)
        self.stats: list[tuple[int, int] | None] = [None] * len(files)
        self.served: set[str] | None = None  # targets the repository's other images serve (auditor.alternatives)
        # --cache-check content: an unchanged stat proves nothing; every file is read and hashed
        self.stat_trusted = cache is not None and options.cache_check != "content"

    def run(self) -> list[FileResult]:
        misses = self._from_cache()
        if misses or self.cache is None or "rules" not in self.cache.meta:
            self._check(misses)
        elif self.cache is not None:
            self.outcome.warnings.extend(self.cache.meta.get("warnings", []))
        from auditor.alternatives import served_for

        self.served = served_for(self.results, self.files, self.cache)  # before the save: it may update meta
        if self.cache is not None:
            self.cache.save(keep=self._kept_entries())
            self.outcome.warnings.extend(self.cache.warnings)
        return [r for r in self.results if r is not None]

    def _from_cache(self) -> list[int]:
        misses: list[int] = []
        for index, source in enumerate(self.files):
            try:
                info = os.stat(source.path)
            except OSError:
                misses.append(index)  # reading it will say what is wrong
                continue
            self.stats[index] = (info.st_size, info.st_mtime_ns)
            hit = self.cache.lookup(source.display, info.st_size, info.st_mtime_ns, self._facts(index)) \
                if self.stat_trusted else None
            if hit is None:
                misses.append(index)
            else:
                self.results[index] = hit
                self.outcome.files_cached += 1
        return misses

    def _check(self, misses: list[int]) -> None:
        from auditor.parallel import check_in_pool, prefilter_in_pool, resolve_jobs, run_serially
        from auditor.progress import Progress

        jobs = resolve_jobs(self.options.jobs)
        unread = [(i, self.files[i], self.stats[i][0] if self.stats[i] else 0, self._expected(i)) for i in misses]
        # Files with a cached digest (stat changed, or --cache-check content) are mostly served by
        # hashing alone: only the others make reading and prefiltering worth a pool.
        if prefilter_in_pool(jobs, [task for task in unread if task[3] is None]):
            runtime = self._runtime()
            tasks, held = unread, {}  # a big cold run: the workers read and prefilter too
        else:
            # The cache keeps the prefilter of its settings: a run whose changed files all fail it
            # (most pre-commit runs) never loads the rules, nor libcst with them.
            cached = self._cached_prefilter()
            runtime = self._runtime() if cached is None else None
            directives = UNUSED_SUPPRESSION in (self.cache.meta.get("rules") or ()) if self.cache else False
            tasks, held = self._prefilter(runtime.needs_check if runtime is not None
                                          else partial(needs_check, may_match=cached, directives=directives), misses)
            if runtime is None:
                if not tasks:
                    self.outcome.warnings.extend(self.cache.meta.get("warnings", []))  # type: ignore[union-attr]
                    return
                runtime = self._runtime()
        progress = Progress(self.options.progress, sum(t[2] for t in tasks), len(tasks))
        try:
            if run_serially(jobs, tasks):
                from auditor.python_scan import unvalidated_parsing

                progress.start()
                with unvalidated_parsing():
                    self._check_serially(runtime, tasks, held, progress)
            else:
                held.clear()
                outcomes, warnings = check_in_pool(runtime, tasks, jobs, self.cache is not None,
                                                   progress.advance, progress.start)
                self.outcome.warnings.extend(warnings)
                for index, result, content in outcomes:
                    self._outcome(runtime, index, result, content)
        finally:
            progress.stop()

    def _check_serially(self, runtime: Runtime, tasks: list[Task], held: dict[int, bytes], progress: Progress) -> None:
        for index, source, size, expected in tasks:
            data = held.pop(index, None)
            if data is None:
                result, content = runtime.check_with_digest(source, self.cache is not None, expected)
            else:
                result, content = runtime.check_data(source, data), self._digest(data)
            self._outcome(runtime, index, result, content)
            progress.advance(size)

    def _runtime(self) -> Runtime:
        from auditor.registry import registry_warnings

        runtime = Runtime(self.outcome.rules, catalogue_for(self.options), self.options.max_bytes, self.options,
                          self.outcome.floor, self.project, root=self.outcome.scan_root or self.outcome.root)
        warnings = list(registry_warnings())
        self.outcome.warnings.extend(warnings)
        if self.cache is not None:
            self.cache.meta.update({"rules": [r.code for r in runtime.rules], "warnings": warnings,
                                    "prefilter": runtime.prefilter.to_data()})
        return runtime

    def _cached_prefilter(self) -> Prefilter | None:
        data = self.cache.meta.get("prefilter") if self.cache is not None else None
        if data is None:
            return None
        from auditor.prefilter import Prefilter

        try:
            return Prefilter.from_data(data)
        except (TypeError, ValueError):  # written by another format: rebuild it from the rules
            return None

    def _expected(self, index: int) -> str | None:
        """The cached digest of a file whose stat changed but whose size did not."""
        stat = self.stats[index]
        if self.cache is None or stat is None:
            return None
        return self.cache.digest_for(self.files[index].display, stat[0], self._facts(index))

    def _facts(self, index: int) -> str:
        """What a cached result of this file depends on besides its bytes (usually nothing)."""
        keys = self._fact_keys
        if keys[index] is None:
            source = self.files[index]
            keys[index] = self.project.key(source.path, source.display)
        return keys[index]

    def _outcome(self, runtime: Runtime, index: int, result: FileResult | None, content: str | None) -> None:
        """Record a checked file; None means its bytes matched the cached digest."""
        if result is None:
            stat = self.stats[index]
            source = self.files[index]
            hit = self.cache.lookup_content(source.display, stat[0], stat[1], content, self._facts(index)) \
                if self.cache and stat else None
            if hit is not None:
                self.results[index] = hit
                self.outcome.files_cached += 1
                return
            result, content = runtime.check_with_digest(source, self.cache is not None)
        self._record(index, result, content)

    def _prefilter(self, wanted: Callable[[SourceFile, bytes], bool],
                   misses: list[int]) -> tuple[list[Task], dict[int, bytes]]:
        """Read every miss once: content-identical files come from the cache, files the prefilter
        rules out get an empty result; the rest are the tasks (small ones keep their bytes)."""
        tasks: list[Task] = []
        held: dict[int, bytes] = {}
        held_bytes = 0
        for index in misses:
            source = self.files[index]
            try:
                data, error = read_bytes(source, self.options.max_bytes)
            except Exception as exc:  # this file's error; the others go on
                self._record(index, failed_file(source.display, exc), None)
                continue
            if error is not None:
                self._record(index, FileResult(source.display, errors=[error]), None)
                continue
            content = self._digest(data)
            stat = self.stats[index]
            if self.cache is not None and stat is not None and content is not None:
                hit = self.cache.lookup_content(source.display, stat[0], stat[1], content, self._facts(index))
                if hit is not None:
                    self.results[index] = hit
                    self.outcome.files_cached += 1
                    continue
            if not wanted(source, data):
                self._record(index, unchecked_result(source, data), content)
                continue
            tasks.append((index, source, len(data), None))
            if held_bytes < 4 * 1024 * 1024:  # enough for any serial run; a pool re-reads
                held[index] = data
                held_bytes += len(data)
        return tasks, held

    def _digest(self, data: bytes) -> str | None:
        if self.cache is None:
            return None
        from auditor.cache import digest

        return digest(data)

    def _record(self, index: int, result: FileResult, content: str | None) -> None:
        self.results[index] = result
        self.outcome.files_parsed += result.parsed
        stat = self.stats[index]
        if self.cache is not None and content is not None and stat is not None:
            self.cache.store(result, stat[0], stat[1], content, self._facts(index))

    def _kept_entries(self) -> set[str] | None:
        """A scan of the whole project drops entries of files that are gone; a partial one keeps
        the other entries."""
        if self.cache is None or not self.whole_project:
            return None
        return {self.cache.entry_key(source.display, self._facts(index)) for index, source in enumerate(self.files)}
