"""The JSON report: a contract read by CI, baselines, SARIF and outside users.

Its shape is pinned by tests/test_json_contract.py; bump FORMAT_VERSION when it changes."""

from __future__ import annotations

import json
from collections import Counter

from auditor import TOOL_NAME, __version__
from auditor.engine import ScanResult
from auditor.model import CATEGORIES, SEVERITIES, TARGETS
from auditor.score import Scores

FORMAT_VERSION = 1


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


def build_report(result: ScanResult, scores: Scores) -> dict:
    return {
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
        "findings": [f.to_dict() for f in result.findings],
        "errors": [e.to_dict() for e in result.errors],
        "warnings": sorted(result.warnings),
    }


_ITEM_LISTS = ("findings", "errors")


def render_json(result: ScanResult, scores: Scores) -> str:
    """Sorted keys, one finding or error per line (diff-friendly), everything else compact.

    json's C encoder only runs without `indent`; laying the lines out here keeps a 12,000-finding
    report at a fraction of the time `indent=2` takes."""
    report = build_report(result, scores)
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")).encode
    lines = []
    for key in sorted(report):
        value = report[key]
        if key in _ITEM_LISTS and value:
            items = ",\n    ".join(map(encode, value))
            lines.append(f'  "{key}": [\n    {items}\n  ]')
        else:
            lines.append(f'  "{key}": {encode(value)}')
    return "{\n" + ",\n".join(lines) + "\n}\n"
