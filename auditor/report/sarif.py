"""`--format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it (upload with
github/codeql-action/upload-sarif; name the file `*.sarif`).

- one run; `results` is always a list, `[]` when the scan is clean (upload-sarif rejects a run
  without it);
- `tool.driver.rules`: every rule that ran, with short and full descriptions and help from the
  rule's own docs (what / why / use instead, as `audit explain` prints them);
- 1-based lines and columns counted in code points (`columnKind`), end column exclusive;
- URIs relative to `%SRCROOT%`, the repository root (the nearest folder above the working
  directory holding `.git`; else the working directory), also when `audit` runs in a subfolder;
- `automationDetails.id`: `lockin-auditor/` plus the scanned folder relative to that root, so
  runs over different folders of one repository are separate categories in code scanning;
- `helpUri` per rule: the README's rule table;
- a notebook finding points at the line of the `.ipynb` file that holds its source line
  (auditor.report.notebook_lines), its cell and cell line in the message and properties;
- `partialFingerprints["lockinFinding/v1"]`: the baseline's fingerprint (path from the repository
  root, rule, normalised code, occurrence), stable when code moves; GitHub computes its own line hash itself;
- files that could not be audited are tool execution notifications, not results."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from auditor import TOOL_NAME, __version__
from auditor.discover.ignore import repository_root as nearest_git_folder
from auditor.gates.baseline import keyed
from auditor.report.model import Report
from auditor.report.notebook_lines import NotebookPlaces
from auditor.report.rules_view import explanation_markdown

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/lockin-auditor/"
HELP_URI = INFORMATION_URI + "#rules"  # the README's rule table (every code, its effects and fixes)
LEVELS = {"blocker": "error", "major": "error", "minor": "warning", "info": "note"}
PROBLEM = {"blocker": "error", "major": "error", "minor": "warning", "info": "recommendation"}
FINGERPRINT = "lockinFinding/v1"


def _clip(text: str, limit: int = 1024) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_sentence(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    return line if end < 0 else line[: end + 1]


def _rule(rule: object) -> dict:
    what, why, instead = rule.what.strip(), rule.why.strip(), rule.instead.strip()
    return {
        "id": rule.code,
        "name": rule.name,
        "helpUri": HELP_URI,
        "shortDescription": {"text": _clip(_first_sentence(what) or rule.name)},
        "fullDescription": {"text": _clip(what)},
        "help": {"text": _clip(f"{what}\n\nWhy it matters: {why}\n\nUse instead: {instead}", 8000),
                 "markdown": explanation_markdown(rule)},
        "defaultConfiguration": {"level": LEVELS.get(rule.severity.value, "warning")},
        "properties": {"tags": ["portability", "nvidia-lock-in", rule.category.value], "precision": "high",
                       "problem.severity": PROBLEM.get(rule.severity.value, "warning")},
    }


def repository_root(folder: str) -> str:
    """The nearest folder at or above `folder` holding `.git` (a folder, a worktree's file or a
    link: only its name is looked at, nothing is read), else `folder` itself."""
    start = os.path.abspath(folder)
    return nearest_git_folder(start) or start


class _Paths:
    """Report paths (relative to the working directory) as URIs relative to the repository root."""

    def __init__(self, report: Report) -> None:
        self.top = repository_root(report.root)
        prefix = os.path.relpath(os.path.abspath(report.root), self.top)
        self.prefix = "" if prefix == "." else prefix.replace(os.sep, "/")
        scanned = os.path.relpath(os.path.abspath(report.result.scan_root or report.root), self.top)
        self.category = "" if scanned == "." else scanned.replace(os.sep, "/")

    def relative(self, path: str) -> str:
        path = path.replace("\\", "/")
        return os.path.normpath(os.path.join(self.prefix, path)).replace(os.sep, "/") if self.prefix else path

    def uri(self, path: str) -> str:
        return quote(self.relative(path), safe="/")


def document(report: Report) -> dict:
    rules = sorted(report.result.rules, key=lambda r: r.code)
    index = {rule.code: i for i, rule in enumerate(rules)}
    paths = _Paths(report)
    places = NotebookPlaces(report)
    results = []
    # fingerprinted by the root-relative path: the same alert whichever folder `audit` ran in
    for fp, f in keyed(report.findings, {f.path: paths.relative(f.path) for f in report.findings}):
        message = f.message + (f" Fix: {f.suggestion}" if f.suggestion else "")
        region = {"startLine": f.line, "startColumn": f.column, "endLine": max(f.end_line, f.line),
                  "endColumn": max(f.end_column, 1)}
        result = {
            "ruleId": f.rule, "level": LEVELS.get(f.severity, "warning"), "message": {"text": message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": paths.uri(f.path), "uriBaseId": "%SRCROOT%"},
                                                "region": region}}],
            "partialFingerprints": {FINGERPRINT: fp},
            "properties": {"severity": f.severity, "category": f.category},
        }
        if f.rule in index:
            result["ruleIndex"] = index[f.rule]
        if f.cell is not None:  # a notebook: its file lines are JSON; name the cell, point at its line there
            result["message"]["text"] = f"cell {f.cell}, line {f.line}: {message}"
            place = places.region(f)
            result["locations"][0]["physicalLocation"]["region"] = {"startLine": 1} if place is None else {
                "startLine": place.line, "startColumn": place.column, "endLine": place.end_line,
                "endColumn": place.end_column}
            result["properties"].update({"cell": f.cell, "cellLine": f.line, "cellColumn": f.column})
        results.append(result)
    notifications = [{
        "level": "error", "message": {"text": f"{e.path} could not be audited ({e.kind}): {e.message}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": paths.uri(e.path), "uriBaseId": "%SRCROOT%"}}}],
    } for e in report.errors]
    root = Path(paths.top).as_uri().rstrip("/") + "/"
    working = Path(report.root).absolute().as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": TOOL_NAME, "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": [_rule(r) for r in rules]}},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root}},
            "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications,
                             "workingDirectory": {"uri": working}}],
            "automationDetails": {"id": f"{TOOL_NAME}/" + (f"{paths.category}/" if paths.category else "")},
            "results": results,
        }],
    }


def render(report: Report, out: TextIO) -> None:
    out.write(json.dumps(document(report), indent=2, ensure_ascii=False) + "\n")
