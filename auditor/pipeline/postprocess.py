"""What happens to findings after the rules have run.

Per file, inside the Runtime: the file's suppression comments are applied in its kind's comment
syntax, and those that silence nothing are reported (LK001, `unused-suppression`).
Per scan, after the cache: the files' results merged; a finding reported twice (a file included by
two requirement files) kept once; CUDA sources linked to the build that compiles them
and dispatch branches on targets no dispatch chooses (auditor.analysis.crossfile); NVIDIA images given "works" where another Dockerfile serves the
target (auditor.analysis.alternatives); then per-file-ignores and severity overrides, which are
cheap and must not invalidate the cached results when they change. A file's result holds at most
MAX_FINDINGS_PER_FILE findings (`capped`), and whatever its check raised is its error entry
(`failed_file`)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from auditor.analysis.alternatives import with_alternatives
from auditor.analysis.crossfile import (
    link_dependency_uses,
    link_kernel_sources,
    link_optional_modules,
    link_unchosen_targets,
)
from auditor.config import nearest
from auditor.discover.kinds import BY_NAME as KINDS_BY_NAME
from auditor.model import MAX_FINDINGS_PER_FILE, OMITTED, Edit, FileError, FileResult, Finding, Fix, omitted_error

if TYPE_CHECKING:
    from auditor.config.settings import Settings
    from auditor.discover.files import SourceFile
    from auditor.pipeline.runtime import Runtime
    from auditor.report.model import ScanResult

UNUSED_SUPPRESSION = "LK001"  # the rule that reports suppressions silencing nothing


def apply_suppressions(runtime: Runtime, source: SourceFile, text: str, result: FileResult) -> None:
    """Apply the file's suppression comments, in its kind's comment syntax (auditor.discover.kinds); report
    those that silence nothing (LK001)."""
    # the suppression syntax, for a file being checked: a run served from the cache never loads it
    from auditor.gates import suppress

    kind = KINDS_BY_NAME[source.kind]
    if kind.comment is None:  # JSON: no comments, nothing to apply
        return
    directives = suppress.find_directives(text, kind.comment, kind.python, runtime.code_prefixes)
    if not directives:
        return
    applied = suppress.apply(result.findings, directives, kind.suppress_above)
    result.findings, result.suppressed = applied.kept, applied.suppressed
    if runtime.unused_rule is None or any(error.kind == OMITTED for error in result.errors):
        return  # with findings not kept, a directive silencing nothing kept may silence one of them
    # FileContext brings libcst: only a run that checks files reports LK001 (this module is on every run's path)
    from auditor.context import FileContext
    ctx = FileContext(source.display, text, runtime.catalogue, source.kind, runtime.project.facts(source.path, source.display))
    # An item naming LK001 itself is not judged: it is used exactly when it silences what this pass reports.
    judged = runtime.selected_codes - {UNUSED_SUPPRESSION}
    for problem in suppress.problems(directives, ctx.lines, partial(_known_code, runtime), judged.__contains__, _suggest):
        column, end_column, replacement = problem.removal
        fix = Fix("safe", "Remove the unused suppression",
                  (Edit(problem.line, column, problem.line, end_column, replacement),))
        finding = ctx.make_finding(runtime.unused_rule, problem.line, problem.column, problem.line,
                                   problem.end_column, {"problem": problem.message})
        ctx.findings.append(replace(finding, fix=fix))
    if ctx.findings:
        # Only a directive that names LK001 silences these: an unused catch-all would hide itself.
        naming = [d for d in directives if d.items is not None and d.corrected is None]
        again = suppress.apply(ctx.findings, naming)
        result.findings = sorted([*result.findings, *again.kept], key=Finding.sort_key)
        result.suppressed.extend(again.suppressed)


def _known_code(runtime: Runtime, item: str) -> str | None:
    if runtime.known_codes is None:
        # the rules: only a run that reports unused suppressions
        from auditor.checks.registry import all_rules

        runtime.known_codes = {}
        for rule in all_rules():
            runtime.known_codes[rule.code.lower()] = rule.code
            runtime.known_codes[rule.name] = rule.code
    return runtime.known_codes.get(item.lower())


def _suggest(item: str) -> str:
    # the rules: only a run that reports unused suppressions
    from auditor.checks.registry import all_rules

    return nearest(item, [r.code for r in all_rules()] + [r.name for r in all_rules()])


def collect(outcome: ScanResult, results: list[FileResult], served: set[str] | None, settings: Settings) -> None:
    """The files' results into the scan's, then the steps across files and the settings' steps."""
    for result in results:
        outcome.findings.extend(result.findings)
        outcome.errors.extend(result.errors)
        outcome.suppressed.extend(result.suppressed)
    # A file included by two requirement files reports its findings once.
    linked = link_optional_modules(link_kernel_sources(list(set(outcome.findings))))
    outcome.findings = sorted(link_unchosen_targets(link_dependency_uses(linked)), key=Finding.sort_key)
    if outcome.findings:
        outcome.findings = with_alternatives(outcome.findings, served)
    outcome.errors.sort()
    apply_settings(outcome, settings)


def apply_settings(outcome: ScanResult, settings: Settings) -> None:
    """What the settings do to findings after the cache: per-file-ignores and severity overrides
    (cheap, and changing them must not invalidate the cached results)."""
    if settings.per_file_ignores:
        # only with per-file-ignores
        from auditor.gates.suppress import per_file_ignored

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


def capped(result: FileResult) -> FileResult:
    """At most MAX_FINDINGS_PER_FILE findings per file whatever made them (the contexts cap each
    part of a file; a notebook joins two), the rest counted in an error entry."""
    if len(result.findings) <= MAX_FINDINGS_PER_FILE:
        return result
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
