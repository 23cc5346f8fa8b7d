"""`--format junit`: JUnit XML for CI test views (GitLab `artifacts: reports: junit:`, Jenkins,
GitHub test-report actions). One test suite per file with findings or errors, one failing test
case per finding, an error case per file that could not be audited, and a `gate` case that fails
when the run's gate does.

A finding's test name holds no line: rule, name, path and the start of the baseline's fingerprint
(path, rule, normalised code, occurrence), so a finding whose line moved is the same test, not one
new failure and one fix in a CI test view. The line is in the `line` attribute and the text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import TextIO

from auditor import TOOL_NAME
from auditor.console import printable
from auditor.gates.baseline import keyed
from auditor.model import Finding
from auditor.report.model import Report
from auditor.report.notebook_lines import NotebookPlaces

FINGERPRINT_CHARS = 12  # of the baseline fingerprint's 20 hex digits: unique enough within one file
# Characters XML 1.0 cannot carry at all (a snippet may hold any of them).
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: object) -> str:
    return _INVALID.sub("\ufffd", str(value))


def _value(value: object) -> str:
    """A value from the scanned repository (a path, a snippet, a message) on one line of its own:
    its newlines and other controls escaped (auditor.console.printable)."""
    return _text(printable(str(value)))


def _file_line(finding: Finding, places: NotebookPlaces) -> int:
    """The line in the file itself: a notebook finding's line in the `.ipynb` JSON."""
    if finding.cell is None:
        return finding.line
    region = places.region(finding)
    return region.line if region is not None else 1


def build(report: Report) -> ET.Element:
    suites = ET.Element("testsuites", name=TOOL_NAME)
    by_path: dict[str, list] = defaultdict(list)
    for fp, f in keyed(report.findings):
        by_path[f.path].append((fp, f))
    errors_by_path: dict[str, list] = defaultdict(list)
    for e in report.errors:
        errors_by_path[e.path].append(e)
    places = NotebookPlaces(report)
    total = failures = errors = 0
    for path in sorted(set(by_path) | set(errors_by_path)):
        suite = ET.SubElement(suites, "testsuite", name=_value(path))
        classname = _value(path.rsplit(".", 1)[0].replace("/", "."))
        for fp, f in by_path[path]:
            # A notebook's lines are counted in a cell: name it, and point at the notebook's own line
            # (the first line when the notebook cannot be read again).
            where = f"cell {f.cell}:{f.line}:{f.column}" if f.cell is not None else f"{f.line}:{f.column}"
            case = ET.SubElement(suite, "testcase", name=_value(f"{f.rule} {f.name} in {path} [{fp[:FINGERPRINT_CHARS]}]"),
                                 classname=classname, file=_value(path), line=str(_file_line(f, places)))
            failure = ET.SubElement(case, "failure", message=_value(f.message), type=f.severity)
            # Every line starts with our own word: a value starting `::` would otherwise begin a line
            # that a CI log reads as a workflow command (issue 20, D28).
            failure.text = "\n".join([f"{f.rule} {_value(f.message)}", f"at {_value(path)}:{where}",
                                      f"code: {_value(f.snippet)}", f"fix: {_value(f.suggestion)}"])
        for e in errors_by_path[path]:
            case = ET.SubElement(suite, "testcase", name=_value(f"audit {path}"), classname=classname, file=_value(path))
            error = ET.SubElement(case, "error", message=_value(e.message), type=_value(e.kind))
            error.text = f"not audited: {_value(e.message)}"
        suite.set("tests", str(len(by_path[path]) + len(errors_by_path[path])))
        suite.set("failures", str(len(by_path[path])))
        suite.set("errors", str(len(errors_by_path[path])))
        total += len(by_path[path]) + len(errors_by_path[path])
        failures += len(by_path[path])
        errors += len(errors_by_path[path])
    gate_suite = ET.SubElement(suites, "testsuite", name=f"{TOOL_NAME} gate", tests="1",
                               failures="0" if report.gate.passed else "1", errors="0")
    case = ET.SubElement(gate_suite, "testcase", name="gate", classname=TOOL_NAME)
    if not report.gate.passed:
        failure = ET.SubElement(case, "failure", message="the gate failed", type="gate")
        failure.text = "\n".join(f"gate: {_value(reason)}" for reason in report.gate.reasons)
    suites.set("tests", str(total + 1))
    suites.set("failures", str(failures + (0 if report.gate.passed else 1)))
    suites.set("errors", str(errors))
    return suites


def render(report: Report, out: TextIO) -> None:
    tree = build(report)
    ET.indent(tree)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(tree, encoding="unicode") + "\n")
