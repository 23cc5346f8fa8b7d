"""The JSON report: a contract read by CI, baselines, SARIF and outside users.

Its shape is pinned by tests/test_json_contract.py; bump FORMAT_VERSION when it changes."""

from __future__ import annotations

import json
from collections import Counter
from json.encoder import encode_basestring  # what JSONEncoder(ensure_ascii=False) uses

from auditor import TOOL_NAME, __version__
from auditor.engine import ScanResult
from auditor.model import CATEGORIES, SEVERITIES, TARGETS, Finding
from auditor.score import Scores

FORMAT_VERSION = 2


def summary(result: ScanResult) -> dict:
    by_category = Counter(f.category for f in result.findings)
    by_severity = Counter(f.severity for f in result.findings)
    return {
        "files": len(result.files),
        "files_parsed": result.files_parsed,
        "files_with_findings": len({f.path for f in result.findings}),
        "findings": len(result.findings),
        "errors": len(result.errors),
        "by_category": {c: by_category.get(c, 0) for c in CATEGORIES},
        "by_severity": {s: by_severity.get(s, 0) for s in SEVERITIES},
        "by_rule": dict(sorted(Counter(f.rule for f in result.findings).items())),
    }


def build_report(result: ScanResult, scores: Scores, with_findings: bool = True) -> dict:
    """The report as a dict; `with_findings=False` leaves the findings out (render_json lays them
    out itself)."""
    report = {
        "tool": {"name": TOOL_NAME, "version": __version__},
        "format_version": FORMAT_VERSION,
        "targets": list(TARGETS),
        "scores": {"overall": scores.overall, **scores.targets},
        "grades": dict(scores.grades),
        "costs": {
            target: [{"rule": c.rule, "name": c.name, "count": c.count, "files": c.files, "points": c.points}
                     for c in costs]
            for target, costs in scores.costs.items()
        },
        "summary": summary(result),
        "errors": [e.to_dict() for e in result.errors],
        "warnings": sorted(result.warnings),
    }
    if with_findings:
        report["findings"] = [f.to_dict() for f in result.findings]
    return report


def render_json(result: ScanResult, scores: Scores) -> str:
    """Sorted keys, one finding or error per line (diff-friendly), everything else compact.

    json's C encoder only runs without `indent`, so the lines are laid out here; the findings,
    the bulk of a large report, come from FindingLines."""
    report = build_report(result, scores, with_findings=False)
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")).encode
    items = {"findings": list(map(FindingLines(), result.findings)), "errors": list(map(encode, report["errors"]))}
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

    def __init__(self) -> None:
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
        fix = "null" if f.fix is None else self.encode_effects(f.fix.to_dict())
        return (f'{{"category": {s(f.category)}, "cell": {cell}, "column": {f.column:d}, "context": {context}, '
                f'"end_column": {f.end_column:d}, "end_line": {f.end_line:d}, "fix": {fix}, "line": {f.line:d}, '
                f'"message": {s(f.message)}, "min_torch": {since}, '
                f'"name": {s(f.name)}, "path": {s(f.path)}, "rule": {s(f.rule)}, "severity": {s(f.severity)}, '
                f'"snippet": {encode_basestring(f.snippet)}, "suggestion": {s(f.suggestion)}, '
                f'"targets": {self.targets(f.targets)}}}')
