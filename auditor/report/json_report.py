"""The JSON report: a contract read by CI, baselines, SARIF and outside users.

Its shape is pinned by tests/test_json_contract.py; bump FORMAT_VERSION when it changes
(see the history below). Everything but `run` depends only on the files and the settings: a cold
and a warm run (or a serial and a parallel one) give byte-identical reports once `run` is set aside."""

from __future__ import annotations

import json
from collections import Counter
from json.encoder import encode_basestring  # what JSONEncoder(ensure_ascii=False) uses
from typing import TYPE_CHECKING, TextIO

from auditor import TOOL_NAME, __version__, targets
from auditor.model import CATEGORIES, SEVERITIES, Finding
from auditor.portability.score import Scores, context_counts
from auditor.report.model import ScanResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from auditor.report.model import Report

# 3: `root` (the absolute folder finding paths are relative to: the working directory), `scan_root`
# (the absolute folder scanned: the one given, or the common folder of the paths given), `gate`,
# `baseline`, `changed_lines` and `suppressed`; `summary.suppressed`; the `suppression` category;
# `fix.reason` (why a fix is only shown); `run` (what this run parsed and took from the cache:
# `summary.files_parsed` moved there).
# 4: per-target `verdicts` (would the code run there as it is, and the first reasons it would not)
# and `summary.by_context`; each finding's `context` is set from where it stands.
# 5: the targets come from the registry (rules/targets.toml): `targets` gains "npu" (Huawei Ascend),
# and so do `scores`, `grades`, `verdicts`, `costs` and each finding's `targets`; `overall` names
# the set the `overall` score averages ({name, version, members}: "core" 1 is the six targets of
# format 4, so adding a target moves no gate); `incomplete` (null, or why scores are withheld: files
# failed with an internal error), and then `scores`/`grades` values are null and a verdict that
# would not be `fails` is `unknown`, whose reasons have `rule` and `line` null and the file's path.
# 6: `focus` (null, or the targets `--target` narrowed the report to: then `targets`, `verdicts`,
# `costs` and the target keys of `scores` and `grades` are those targets only, `overall` staying,
# and `findings` only those that matter there; each finding's own `targets` stays whole);
# `baseline.moved` ([{from, to}]: recorded files found again under another path, paths relative
# to the baseline's folder; their findings stay known).
# 7: `components` (the parts of the repository: [{name, kind, paths, shipped, findings, features,
# verdicts, scores}], shipped ones first; `features`: its opt-in NVIDIA-only features, [{name, rule,
# path, line, verdicts}], verdicts by target) and each finding's `component` (its component's name);
# the `feature` context; the headline
# `scores`, `grades`, `verdicts` and `costs` judge the shipped components only (the package(s), or
# the programs when none ships); `summary` still counts every finding.
# 8: each finding has `guard`: the kinds of the guards behind its `guarded`/`optional` context
# ("option", "build+env"; rules/contexts.toml, "Guard kinds"), or null; context "demo" (a package
# module's `if __name__ == "__main__":` block, never failing a verdict, like "test").
# 9: `fixes` (null, or with --fix/--diff what the run did: {mode, unsafe, fixed, files_changed, created
# [{path, written}], device_owner {module, function, path, created, kind} or null, files_made_cuda_clean,
# files_not_cuda_clean, files [{path, cuda_clean_before, cuda_clean, fixed {rule: count}, blockers [{rule,
# name, line, column}], blocker_count}]}); a finding's `fix` may have `creates` ([{path, content}]: files the
# fix creates).
FORMAT_VERSION = 9


def summary(result: ScanResult, findings: list[Finding] | None = None, errors: int | None = None) -> dict:
    """Counts of what is reported (`findings`, default: every finding of the scan)."""
    findings = result.findings if findings is None else findings
    by_category = Counter(f.category for f in findings)
    by_severity = Counter(f.severity for f in findings)
    return {
        "files": len(result.files),
        "files_with_findings": len({f.path for f in findings}),
        "findings": len(findings),
        "errors": len(result.errors) if errors is None else errors,
        "suppressed": len(result.suppressed),
        "by_category": {c: by_category.get(c, 0) for c in CATEGORIES},
        "by_severity": {s: by_severity.get(s, 0) for s in SEVERITIES},
        "by_rule": dict(sorted(Counter(f.rule for f in findings).items())),
        "by_context": dict(sorted(context_counts(findings).items())),
    }


def _run_facts(result: ScanResult, report: Report | None) -> dict:
    """What the run was and decided: where paths start, the gate, the baseline, the changed lines."""
    gate = report.gate.to_dict() if report is not None else {"passed": True, "exit_code": 0, "reasons": [], "checks": []}
    baseline = None
    changed = None
    suppressed: list[dict] = []
    if report is not None and report.baseline is not None:
        b = report.baseline
        baseline = {"path": b.path, "new": len(b.new), "known": len(b.known), "stale": b.stale,
                    "known_errors": len(b.known_errors), "scores": dict(b.scores),
                    "moved": [{"from": was, "to": now} for was, now in b.moved]}
    if report is not None and report.changed is not None:
        changed = {"base": report.changed.base, "files": len(report.changed.files), "hidden": report.hidden_by_diff}
    if report is not None and report.settings.show_suppressed:
        suppressed = [{**f.to_dict(), "component": result.component_of(f.path), "suppressed_by": how}
                      for f, how in report.suppressed]
    return {"root": result.root, "scan_root": result.scan_root or result.root, "gate": gate, "baseline": baseline, "changed_lines": changed,
            "suppressed": suppressed}


def _shown(values: dict, shown: tuple[str, ...]) -> dict:
    """`overall` and the shown targets' values, in that order."""
    return {"overall": values["overall"], **{target: values[target] for target in shown}}


def build_report(result: ScanResult, scores: Scores, with_findings: bool = True, report: Report | None = None) -> dict:
    """The report as a dict; `with_findings=False` leaves the findings out (render_json lays them
    out itself). With a `report`, findings and errors are the ones it reports."""
    findings = report.findings if report is not None else result.findings
    errors = report.errors if report is not None else result.errors
    shown = report.shown_targets if report is not None else targets.names()
    judged = report.verdicts if report is not None else result.headline_verdicts()
    document = {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "format_version": FORMAT_VERSION,
        "targets": list(shown),
        "focus": list(report.focus) if report is not None and report.focus is not None else None,
        "overall": (scores.overall_set or targets.overall_set()).to_dict(),
        "incomplete": scores.withheld,
        "scores": _shown(scores.score_map(), shown),
        "grades": _shown(scores.grade_map(), shown),
        "verdicts": {target: judged[target].to_dict() for target in shown},
        "components": [part.to_dict(shown) for part in report.components] if report is not None else [],
        "costs": {
            target: [{"rule": c.rule, "name": c.name, "count": c.count, "files": c.files, "points": c.points}
                     for c in scores.costs[target]]
            for target in shown
        },
        "summary": summary(result, findings, len(errors)),
        # How this run got there (what it parsed, what it reused from the cache): differs between a
        # cold and a warm run of the same tree; nothing else in the report does.
        "run": {"files_parsed": result.files_parsed, "files_cached": result.files_cached},
        "errors": [e.to_dict() for e in errors],
        "warnings": sorted(result.warnings),
        "fixes": result.fixes.to_dict() if result.fixes is not None else None,
        **_run_facts(result, report),
    }
    if with_findings:
        document["findings"] = [{**f.to_dict(), "component": result.component_of(f.path)} for f in findings]
    return document


def render(report: Report, out: TextIO) -> None:
    out.write(render_json(report.result, report.scores, report))


def render_json(result: ScanResult, scores: Scores, run: Report | None = None) -> str:
    """Sorted keys, one finding or error per line (diff-friendly), everything else compact.

    json's C encoder only runs without `indent`, so the lines are laid out here; the findings,
    the bulk of a large report, come from FindingLines."""
    report = build_report(result, scores, with_findings=False, report=run)
    findings = run.findings if run is not None else result.findings
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")).encode
    items = {"findings": list(map(FindingLines(result.component_of), findings)), "errors": list(map(encode, report["errors"])),
             "suppressed": list(map(encode, report["suppressed"]))}
    lines = []
    for key in sorted((*report, "findings")):
        if items.get(key):
            body = ",\n    ".join(items[key])
            lines.append(f'  "{key}": [\n    {body}\n  ]')
        else:
            lines.append(f'  "{key}": {encode(report.get(key, []))}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


class FindingLines:
    """`json.dumps(finding.to_dict(), sort_keys=True, ensure_ascii=False, separators=(", ", ": "))`,
    byte for byte (tests/test_json_contract.py), about six times faster: a report repeats the same
    rules, messages, suggestions, paths and effects thousands of times, and each is encoded once."""

    def __init__(self, component_of: Callable[[str], str | None] | None = None) -> None:
        self.component_of = component_of  # a path's component (`component`: null without it)
        self.components: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        self.effects: dict[tuple, str] = {}
        self.encode_effects = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")).encode

    def string(self, value: str) -> str:
        encoded = self.strings.get(value)
        if encoded is None:
            encoded = self.strings[value] = encode_basestring(value)
        return encoded

    def targets(self, effects: dict[str, str]) -> str:
        key = tuple(effects.items())
        encoded = self.effects.get(key)
        if encoded is None:
            encoded = self.effects[key] = self.encode_effects(effects)
        return encoded

    def __call__(self, f: Finding) -> str:
        s = self.string
        since = "null" if f.min_torch is None else s(f.min_torch)
        context = "null" if f.context is None else s(f.context)
        cell = "null" if f.cell is None else f"{f.cell:d}"
        guard = "null" if f.guard is None else s(f.guard)
        fix = "null" if f.fix is None else self.encode_effects(f.fix.to_dict())
        component = self.components.get(f.path)
        if component is None:
            name = self.component_of(f.path) if self.component_of is not None else None
            component = self.components[f.path] = "null" if name is None else s(name)
        return (f'{{"category": {s(f.category)}, "cell": {cell}, "column": {f.column:d}, "component": {component}, '
                f'"context": {context}, '
                f'"end_column": {f.end_column:d}, "end_line": {f.end_line:d}, "fix": {fix}, "guard": {guard}, '
                f'"line": {f.line:d}, '
                f'"message": {s(f.message)}, "min_torch": {since}, '
                f'"name": {s(f.name)}, "path": {s(f.path)}, "rule": {s(f.rule)}, "severity": {s(f.severity)}, '
                f'"snippet": {encode_basestring(f.snippet)}, "suggestion": {s(f.suggestion)}, '
                f'"targets": {self.targets(f.targets)}}}')
