"""Scanning: discover the files, reuse cached results, prefilter and check the rest (over
processes when it pays), then post-process; the orchestration of the pipeline's stages. The
per-process checking lives in auditor.pipeline.runtime, which only a run that checks files loads."""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from auditor import targets
from auditor.analysis.alternatives import served_for
from auditor.analysis.components import Layout, layout_for
from auditor.analysis.project import ProjectInfo
from auditor.cache import reuse
from auditor.cache.folder import cache_location
from auditor.cache.keys import digest
from auditor.cache.results import open_cache
from auditor.config import ConfigError, nearest
from auditor.config.settings import Settings
from auditor.discover.files import SourceFile
from auditor.fix.floor import resolve_floor
from auditor.model import FileResult
from auditor.pipeline import postprocess
from auditor.pipeline.postprocess import failed_file
from auditor.report.model import ScanResult

if TYPE_CHECKING:  # imported lazily: a run served from the cache never loads libcst or the rules
    from collections.abc import Callable

    from auditor.cache.results import Cache
    from auditor.fix.floor import TorchFloor
    from auditor.pipeline.parallel import Task
    from auditor.pipeline.progress import Progress
    from auditor.pipeline.runtime import Runtime
    from auditor.read.prefilter import Prefilter


REGISTRY_META = "registry"  # the target registry's data, kept in the cache's meta
CHECKED_META = "catalogue_checked"  # the catalogue check passed (its plugin warnings), kept in the cache's meta


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
        cache = open_cache(scan_root, settings.cache_dir, settings.effective_select, settings.effective_ignore,
                           settings.max_bytes, display_base=base, extra=_cache_extra(settings, floor))
        targets.prime(cache.meta.get(REGISTRY_META))  # a warm run then parses no rules/targets.toml
    validate_rules(settings, cache)
    found = reuse.discovery(paths, base, settings, cache)
    outcome = ScanResult(root=base, files=found.files, errors=list(found.errors), skipped=found.skipped,
                         scan_root=scan_root, settings=settings,
                         select=settings.effective_select, ignore=settings.effective_ignore, floor=floor)
    whole = cache is not None and len(paths) == 1 and os.path.abspath(paths[0]) == cache.project
    scanner = _Scan(found.files, settings, cache, outcome, whole, reuse.project_info(paths, scan_root, found, cache))
    results = scanner.run()
    postprocess.collect(outcome, results, scanner.served, settings)
    outcome.layout = _layout(scan_root, found.files, settings)
    return outcome


def _layout(scan_root: str, files: list[SourceFile], settings: Settings) -> Layout:
    """The repository's components, from the scanned files' paths and its packaging files."""
    prefix = scan_root.rstrip(os.sep) + os.sep
    relatives = []
    for source in files:
        absolute = os.path.abspath(source.path)
        relative = absolute[len(prefix):] if absolute.startswith(prefix) else source.display
        relatives.append(relative.replace(os.sep, "/"))
    return layout_for(scan_root, relatives, settings.components)


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
    # the rules: only when the cache does not know their names yet
    from auditor.checks.registry import all_rules

    codes = sorted(rule.code for rule in all_rules())
    names = sorted(rule.name for rule in all_rules())
    if cache is not None:
        cache.meta["known"] = [codes, names]
        cache.dirty = True
    return set(codes), set(names)


def _floor(scan_root: str, settings: Settings) -> TorchFloor:
    """The project's torch floor, read before any file is checked: it is part of the cache key.
    --torch-version or the configuration's `torch-version` override the dependency files."""
    project, directory = cache_location(scan_root, settings.cache_dir)
    return resolve_floor(project, settings.torch_version, settings.origin("torch-version"),
                         memo_dir=directory if settings.cache else None)


def _cache_extra(settings: Settings, floor: TorchFloor) -> dict | None:
    extra = settings.cache_extra()
    if floor.key() is None:
        return extra
    return {**(extra or {}), "torch_floor": floor.key()}


class _Scan:
    """One scan's bookkeeping: cache hits first, then the prefilter, then the candidates."""

    def __init__(self, files: list[SourceFile], options: Settings, cache: Cache | None, outcome: ScanResult,
                 whole_project: bool = False, project: ProjectInfo | None = None) -> None:
        self.files = files
        self.whole_project = whole_project
        self.project = project if project is not None else ProjectInfo(outcome.root)
        self.options = options
        self.cache = cache
        self.outcome = outcome
        self.results: list[FileResult | None] = [None] * len(files)
        self._fact_keys: list[str | None] = [None] * len(files)
        self.stats: list[tuple[int, int] | None] = [None] * len(files)
        self.served: set[str] | None = None  # targets the repository's other images serve (auditor.analysis.alternatives)
        # --cache-check content: an unchanged stat proves nothing; every file is read and hashed
        self.stat_trusted = cache is not None and options.cache_check != "content"

    def run(self) -> list[FileResult]:
        misses = self._from_cache()
        if misses or self.cache is None or "rules" not in self.cache.meta:
            self._check(misses)
        elif self.cache is not None:
            self.outcome.warnings.extend(self.cache.meta.get("warnings", []))
        self.served = served_for(self.results, self.files, self.cache)  # before the save: it may update meta
        if self.cache is not None:
            if REGISTRY_META not in self.cache.meta:
                self.cache.meta[REGISTRY_META] = targets.parsed()  # the cache's key covers the file
                self.cache.dirty = True
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
        # only a run with files to check: a warm run imports none of these
        from auditor.pipeline.parallel import check_in_pool, prefilter_in_pool, resolve_jobs, run_serially
        from auditor.pipeline.progress import Progress
        from auditor.read.source import needs_check

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
            directives = postprocess.UNUSED_SUPPRESSION in (self.cache.meta.get("rules") or ()) if self.cache else False
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
                # libcst: this branch checks files in this process
                from auditor.python.scan import unvalidated_parsing

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
        # the rules and libcst: only a run that checks files builds a Runtime
        from auditor.checks.registry import check_warnings, registry_warnings
        from auditor.pipeline.runtime import Runtime, catalogue_for

        # A cache whose key covers this catalogue, code and plugins vouches for the catalogue check.
        checked = self.cache.meta.get(CHECKED_META) if self.cache is not None else None
        checked = tuple(checked) if isinstance(checked, list) and all(isinstance(w, str) for w in checked) else None
        runtime = Runtime(self.outcome.rules, catalogue_for(self.options, checked), self.options.max_bytes,
                          self.options, self.outcome.floor, self.project, root=self.outcome.scan_root or self.outcome.root)
        warnings = list(registry_warnings())
        self.outcome.warnings.extend(warnings)
        if self.cache is not None:
            self.cache.meta[CHECKED_META] = list(check_warnings())
            self.cache.meta.update({"rules": [r.code for r in runtime.rules], "warnings": warnings,
                                    "prefilter": runtime.prefilter.to_data()})
        return runtime

    def _cached_prefilter(self) -> Prefilter | None:
        data = self.cache.meta.get("prefilter") if self.cache is not None else None
        if data is None:
            return None
        # only a run with changed files
        from auditor.read.prefilter import Prefilter

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
        # only a run with files to check (from _check)
        from auditor.read.source import read_bytes, unchecked_result

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
