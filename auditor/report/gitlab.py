"""`--format gitlab`: a GitLab Code Quality report (`artifacts: reports: codequality:`), a JSON
array of issues with a description, a check name, a fingerprint unique per issue (the baseline's:
path, rule, normalised code, occurrence), a severity and a location (a notebook finding: the line
of the `.ipynb` file holding its source line, auditor.report.notebook_lines, its cell named in the
description)."""

from __future__ import annotations

import json
from typing import TextIO

from auditor import TOOL_NAME
from auditor.gates.baseline import fingerprint, keyed
from auditor.report.model import Report
from auditor.report.notebook_lines import NotebookPlaces

SEVERITIES = {"blocker": "blocker", "major": "major", "minor": "minor", "info": "info"}


def issues(report: Report) -> list[dict]:
    out = []
    places = NotebookPlaces(report)
    for fp, f in keyed(report.findings):
        if f.cell is None:
            description = f"{f.rule} {f.message}"
            location = {"path": f.path, "positions": {"begin": {"line": f.line, "column": f.column},
                                                      "end": {"line": f.end_line, "column": f.end_column}}}
        else:  # a notebook's lines are counted in a cell, not in the JSON file: name the cell, point at its line
            description = f"{f.rule} cell {f.cell}, line {f.line}: {f.message}"
            place = places.region(f)
            location = {"path": f.path, "lines": {"begin": 1}} if place is None else {
                "path": f.path, "positions": {"begin": {"line": place.line, "column": place.column},
                                              "end": {"line": place.end_line, "column": place.end_column}}}
        out.append({
            "type": "issue", "check_name": f.rule, "description": description, "content": {"body": f.suggestion},
            "categories": ["Compatibility"], "fingerprint": fp, "severity": SEVERITIES.get(f.severity, "minor"),
            "location": location,
        })
    for e in report.errors:
        out.append({
            "type": "issue", "check_name": f"{TOOL_NAME}/{e.kind}", "description": f"could not be audited: {e.message}",
            "categories": ["Bug Risk"], "fingerprint": fingerprint(e.path, e.kind, "", 0), "severity": "major",
            "location": {"path": e.path, "lines": {"begin": 1}},
        })
    return out


def render(report: Report, out: TextIO) -> None:
    out.write(json.dumps(issues(report), indent=2, ensure_ascii=False) + "\n")
