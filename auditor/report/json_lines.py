"""`--format json-lines`: one JSON object per line, a finding with the same keys as in the JSON
report, or a file that could not be audited as {"error": kind, "message", "path"}; streams well
into `jq -c` and log pipelines."""

from __future__ import annotations

import json
from typing import TextIO

from auditor.report.json_report import FindingLines
from auditor.report.model import Report


def render(report: Report, out: TextIO) -> None:
    lines = list(map(FindingLines(report.result.component_of), report.findings))
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")).encode
    lines += [encode({"error": e.kind, "message": e.message, "path": e.path}) for e in report.errors]
    if lines:
        out.write("\n".join(lines) + "\n")
