"""`--format html` without a browser: the page's escaping and shape, its compact data read back
(nothing lost), the files that cost the most against the scores, components and plans, the CLI and
the wheel. tests/test_html_browser.py drives the page in Chromium."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from html_samples import (
    BREAKOUT,
    COMMENT,
    EVIL_PATH,
    SCRIPT,
    SEPARATORS,
    TARGETS,
    WITHHELD,
    bulk_report,
    finding,
    fix,
    report,
    sample_plan,
    sample_report,
    withheld_report,
)

from auditor.cli import main
from auditor.portability.score import discounted
from auditor.report import REPORTERS
from auditor.report import html_report as html_module
from auditor.report.file_costs import discount, file_costs
from auditor.report.html_data import component_index, components_of, page_data
from auditor.report.html_report import render_html, script_json

ROOT = Path(__file__).resolve().parent.parent
DATA_BLOCK = re.compile(r'<script type="application/json" id="audit-data">(.*?)</script>', re.S)


def data_of(page: str) -> dict:
    return json.loads(DATA_BLOCK.search(page).group(1))


def decode(data: dict) -> list[dict]:
    """The page's findings as report dicts: what report.js reads from the compact rows."""
    strings = data["strings"]

    def s(i: int) -> str | None:
        return None if i < 0 else strings[i]

    fields = {name: i for i, name in enumerate(data["finding_fields"])}
    letters = data["effect_letters"]
    paths = [s(name) if folder < 0 else f"{s(folder)}/{s(name)}" for folder, name in data["paths"]]
    out = []
    for row in data["findings"]:
        def get(name: str, row: list = row) -> object:
            return row[fields[name]]

        fix_row = None if get("fix") < 0 else data["fixes"][get("fix")]
        out.append({
            "path": paths[get("path")], "line": get("line"), "column": get("column"), "rule": s(get("rule")),
            "name": s(get("name")), "category": s(get("category")), "severity": s(get("severity")),
            "message": s(get("message")), "suggestion": s(get("suggestion")), "snippet": s(get("snippet")),
            "context": s(get("context")), "cell": None if get("cell") < 0 else get("cell"),
            "min_torch": s(get("min_torch")),
            "targets": {t: letters[s(get("effects"))[i]] for i, t in enumerate(data["targets"])},
            "fix": None if fix_row is None else {
                "applicability": s(fix_row[0]), "message": s(fix_row[1]), "min_torch": s(fix_row[2]),
                "reason": s(fix_row[3]),
                "edits": [{"line": e[0], "column": e[1], "end_line": e[2], "end_column": e[3], "content": s(e[4])}
                          for e in fix_row[4]]},
        })
    return out


SHOWN = ("path", "line", "column", "rule", "name", "category", "severity", "message", "suggestion", "snippet",
         "context", "cell", "min_torch", "targets", "fix")


def shown(f: dict) -> dict:
    return {key: f[key] for key in SHOWN}


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]


# -- escaping ------------------------------------------------------------------------------------

def test_untrusted_text_cannot_leave_the_data_block():
    page = render_html(sample_report(), sample_plan())
    block = DATA_BLOCK.search(page).group(1)
    assert "<" not in block and ">" not in block and "&" not in block  # no </script>, <!--, ]]> or entity
    assert page.isascii()  # U+2028, U+2029 and every other non-ASCII character are \u escapes
    assert "\u2028" not in page and "\\u2028" in block and "\\u2029" in block
    parser = Elements()
    parser.feed(page)
    assert parser.tags.count("script") == 2 and parser.tags.count("style") == 1
    assert {"img", "svg", "b", "i"}.isdisjoint(parser.tags)  # the payloads made no element
    assert not [a for a in parser.attributes if a.startswith("on")]
    # ... and every payload is still there, as data
    texts = json.dumps(data_of(page))
    for payload in (SCRIPT, BREAKOUT, COMMENT, SEPARATORS, EVIL_PATH, "<b>bold</b>", "examples <i>x</i>"):
        assert json.dumps(payload)[1:-1] in texts


def test_script_json_escapes_what_html_would_read():
    text = script_json({"a": "</script><!--]]>&amp;\u2028\u2029\udcff"})
    assert text == '{"a":"\\u003c/script\\u003e\\u003c!--]]\\u003e\\u0026amp;\\u2028\\u2029\\udcff"}'
    assert json.loads(text) == {"a": "</script><!--]]>&amp;\u2028\u2029\udcff"}


def test_the_policy_runs_only_the_pages_own_script_and_style():
    page = render_html(sample_report())
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    for source in (script, style):
        digest = base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
        assert f"'sha256-{digest}'" in policy
    assert script == html_module.asset("report.js") and style == html_module.asset("report.css")
    assert not re.search(r"\b(src|href)=\"(?!data:)", page)  # nothing to load: no font, script or style URL


def test_an_asset_that_would_close_its_block_is_refused(monkeypatch):
    monkeypatch.setattr(html_module, "asset", lambda name: "x = '</SCRIPT>';" if name.endswith(".js") else "")
    with pytest.raises(ValueError, match="report.js"):
        render_html(sample_report())


def test_the_script_writes_text_only():
    """report.js never parses data as markup (the browser test checks the result)."""
    script = html_module.asset("report.js")
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|setAttribute", script)


# -- the data, read back ----------------------------------------------------------------------------

def test_compact_data_loses_nothing_on_a_real_report(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["fixtures/demo-repo", "--format", "json", "--no-cache", "--isolated"]) == 0
    document = json.loads(capsys.readouterr().out)
    data = data_of(render_html(document))
    assert [shown(f) for f in document["findings"]] == decode(data)
    assert any(f["cell"] is not None for f in document["findings"]) and any(f["fix"] for f in document["findings"])
    for key in ("targets", "overall", "incomplete", "scores", "grades", "verdicts", "costs", "summary", "gate", "errors"):
        assert data[key] == document[key], key
    assert len(data["strings"]) == len(set(data["strings"]))
    # most used first, so the common strings get the shortest indexes
    string_fields = [data["finding_fields"].index(n) for n in ("rule", "name", "category", "severity", "message",
                                                               "suggestion", "snippet", "context", "effects", "min_torch")]
    uses = [0] * len(data["strings"])
    for i in [row[k] for row in data["findings"] for k in string_fields] + [i for pair in data["paths"] for i in pair] + [
            i for f in data["fixes"] for i in (*f[:4], *(e[4] for e in f[4]))]:
        if i >= 0:
            uses[i] += 1
    assert uses == sorted(uses, reverse=True) and uses[-1] >= 1


def test_notebook_cell_missing_fix_and_odd_paths_read_back():
    findings = [finding("nb.ipynb", cell=4, line=2), finding("top.py"), finding("/abs.py"), finding("a/b/c.py", fix=fix()),
                finding("x.py", context="guarded+test", min_torch=None, suggestion="", snippet="")]
    data = page_data(report(findings))
    back = decode(data)
    assert back == [shown(f) for f in findings]
    assert back[0]["cell"] == 4 and back[1]["cell"] is None and back[1]["fix"] is None
    assert back[2]["path"] == "/abs.py" and back[3]["fix"]["edits"][0]["content"].startswith("to(")


def test_empty_report_renders():
    page = render_html(report([]))
    data = data_of(page)
    assert data["findings"] == [] and data["strings"] == [] and data["paths"] == [] and data["fixes"] == []
    assert data["file_costs"] == {t: [] for t in (*TARGETS, "overall")}
    assert data["components"] is None and data["plan"] is None
    assert render_html({}).startswith("<!DOCTYPE html>")  # not even the contract's keys


def test_a_withheld_report_goes_in_as_it_is():
    """An incomplete run (format 5): null scores and grades, `unknown` verdicts whose reason has no
    rule or line, and why, all as the report has them; npu is a target like any other."""
    document = withheld_report()
    data = data_of(render_html(document))
    assert data["incomplete"] == WITHHELD and data["overall"] == document["overall"]
    assert data["scores"] == document["scores"] and set(data["scores"].values()) == {None}
    assert data["grades"] == document["grades"] and data["verdicts"] == document["verdicts"]
    assert data["verdicts"]["rocm"]["verdict"] == "unknown" and data["verdicts"]["rocm"]["reasons"][0]["rule"] is None
    assert data["targets"] == list(TARGETS) and "npu" in data["targets"]
    assert decode(data) == [shown(f) for f in document["findings"]]
    assert set(data["file_costs"]) == {*TARGETS, "overall"}  # what the findings cost is known even so


def test_an_incomplete_run_writes_its_page(tmp_path, capsys, monkeypatch):
    import auditor.pipeline.kind_checks as kind_checks

    (tmp_path / "boom.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    (tmp_path / "train.py").write_text("import torch\nmodel = Net().cuda()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    real = kind_checks.scan_python

    def buggy(path, *args, **kwargs):
        if path.endswith("boom.py"):
            raise KeyError("simulated bug")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(kind_checks, "scan_python", buggy)
    out = tmp_path / "report.html"
    assert main([".", "--format", "html", "--no-cache", "--isolated", "--jobs", "1", "-o", str(out)]) == 2
    data = data_of(out.read_text(encoding="utf-8"))
    assert data["incomplete"].startswith("1 file(s) failed with an internal error") and data["targets"][-2:] == ["npu", "cpu"]
    assert set(data["scores"].values()) == {None} and set(data["grades"].values()) == {None}
    assert {v["verdict"] for v in data["verdicts"].values()} == {"unknown", "fails"}
    assert data["overall"]["name"] == "core" and "npu" not in data["overall"]["members"]


def test_equal_fixes_are_stored_once():
    findings = [finding(f"f{i}.py", fix=fix()) for i in range(5)] + [finding("g.py", fix=fix(content="other"))]
    data = page_data(report(findings))
    assert len(data["fixes"]) == 2 and decode(data) == [shown(f) for f in findings]


def test_targets_come_from_the_report():
    """The target list is the report's (the registry's when the run wrote it), never one of the page's own."""
    document = report([finding("a.py", targets={"rocm": "works", "gaudi": "raises"})])
    document["targets"] = ["rocm", "gaudi"]
    data = page_data(document)
    assert data["targets"] == ["rocm", "gaudi"]
    assert decode(data)[0]["targets"] == {"rocm": "works", "gaudi": "raises"}
    assert set(data["file_costs"]) == {"rocm", "gaudi", "overall"}
    del document["targets"]
    document["scores"] = {"overall": 50.0, "rocm": 100.0, "gaudi": 0.0}
    assert page_data(document)["targets"] == ["rocm", "gaudi"]
    assert "rocm" not in html_module.asset("report.js") and "tpu" not in html_module.asset("report.js")


# -- components and plans ---------------------------------------------------------------------------

def test_components_are_read_when_the_report_has_them():
    components = components_of(sample_report(), list(TARGETS))
    assert [c["name"] for c in components] == ["pkg", "examples <i>x</i>", "notebooks"]
    assert components[0]["verdicts"]["tpu"] == "fails" and components[0]["reasons"]["tpu"][0]["rule"] == "LK102"
    assert components[2]["scores"]["cpu"] == 100.0
    # a verdict given as its word only
    words = components_of(report([], [{"name": "x", "kind": "k", "paths": [], "verdicts": {"tpu": "runs"},
                                       "scores": {"tpu": 99}}]), list(TARGETS))
    assert words[0]["verdicts"]["tpu"] == "runs" and words[0]["verdicts"]["cpu"] is None
    assert components_of(report([]), list(TARGETS)) is None


def test_each_finding_belongs_to_its_closest_component():
    components = components_of(report([], [
        {"name": "all", "kind": "repo", "paths": ["."]}, {"name": "pkg", "kind": "package", "paths": ["src/pkg/"]},
        {"name": "sub", "kind": "package", "paths": ["src/pkg/sub"]}, {"name": "ex", "kind": "examples", "paths": ["ex"]},
    ]), list(TARGETS))
    assert component_index({"path": "src/pkg/a.py"}, components) == 1
    assert component_index({"path": "src/pkg/sub/b.py"}, components) == 2  # the closest folder wins
    assert component_index({"path": "ex"}, components) == 3
    assert component_index({"path": "example/a.py"}, components) == 0  # `ex` does not hold `example/`
    assert component_index({"path": "src/pkg/a.py", "component": "ex"}, components) == 3  # named by the finding
    assert component_index({"path": "x.py"}, components_of(report([], [{"name": "p", "paths": ["p"]}]), [])) == -1


def test_findings_carry_their_component():
    data = page_data(sample_report())
    column = data["finding_fields"].index("component")
    by_path = {f["path"]: row[column] for f, row in zip(decode(data), data["findings"], strict=True)}
    assert by_path["pkg/core.py"] == by_path["pkg/sub/ops.py"] == 0
    assert by_path["examples/demo.py"] == by_path[EVIL_PATH] == 1
    assert by_path["notebooks/explore.ipynb"] == 2 and by_path["requirements.txt"] == -1


def test_the_plan_goes_in_as_given():
    page = render_html(sample_report(), sample_plan())
    assert data_of(page)["plan"] == sample_plan()
    assert "<title>lockin-auditor: plan for tpu in /repo</title>" in page
    assert "<title>lockin-auditor: NVIDIA lock-in in /repo</title>" in render_html(sample_report())


# -- files that cost the most -----------------------------------------------------------------------

def test_discount_is_the_scores_discount():
    weights = [40.0, 6.0, 6.0, 2.0, 2.0, 0.25, 6.0]
    assert math.isclose(sum(w * discount(k) for k, w in enumerate(sorted(weights, reverse=True), 1)),
                        discounted(weights))


def test_file_points_add_up_to_what_each_target_loses(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["fixtures/demo-repo", "--format", "json", "--no-cache", "--isolated"]) == 0
    document = json.loads(capsys.readouterr().out)
    shipped = {c["name"] for c in document["components"] if c["shipped"]}
    document["findings"] = [f for f in document["findings"] if f["component"] in shipped]  # what the scores count
    assert document["findings"]
    costs = file_costs(document["findings"], document["targets"], limit=10_000)
    for target in document["targets"]:
        lost = 100.0 - document["scores"][target]
        assert abs(sum(c["points"] for c in costs[target]) - lost) < 0.05 * len(costs[target]) + 0.1, target
        assert sum(c["points"] for c in costs[target]) == pytest.approx(sum(c["points"] for c in document["costs"][target]),
                                                                        abs=0.05 * (len(costs[target]) + len(document["costs"][target])))
        points = [c["points"] for c in costs[target]]
        assert points == sorted(points, reverse=True)
    assert costs == file_costs(document["findings"], document["targets"], 10_000, document["targets"])  # the default
    members = document["overall"]["members"]  # what the overall score averages: not npu (core v1)
    assert "npu" in document["targets"] and "npu" not in members
    overall = file_costs(document["findings"], document["targets"], 10_000, members)["overall"]
    assert overall[0]["points"] == pytest.approx(
        sum(next((c["points"] for c in costs[t] if c["path"] == overall[0]["path"]), 0.0) for t in members)
        / len(members), abs=0.1)
    # the page splits each rule's charged points (the report's costs) over its files
    charged = file_costs(document["findings"], document["targets"], 10_000, members, document["costs"])
    assert page_data(document)["file_costs"]["overall"] == charged["overall"][:25]
    for target in document["targets"]:
        assert sum(c["points"] for c in charged[target]) == pytest.approx(
            sum(c["points"] for c in document["costs"][target]), abs=0.05 * len(charged[target]) + 0.1)
    kernel = next(c for c in costs["cpu"] if c["path"].endswith("/csrc/"))  # a kernel folder is one unit
    assert kernel["findings"] == sum(f["path"].startswith(kernel["path"]) and f["name"] == "cuda-source-file"
                                     for f in document["findings"])
    assert costs["rocm"] == [c for c in costs["rocm"] if c["points"] >= 0]


def test_file_costs_follow_severity_effect_and_context():
    findings = [finding("a.py", severity="blocker"), finding("b.py", severity="minor"),
                finding("c.py", severity="blocker", context="test"), finding("d.py", raises=(), degrades=("tpu",)),
                finding("e.py", raises=())]
    costs = file_costs(findings, list(TARGETS))
    tpu = [c["path"] for c in costs["tpu"]]
    assert tpu[0] == "a.py" and tpu.index("c.py") < tpu.index("b.py")  # 40 x 0.2 test = 8 > 2
    assert "e.py" not in tpu and "d.py" in tpu and "d.py" not in [c["path"] for c in costs["cpu"]]
    assert costs["rocm"] == []  # nothing raises or degrades there
    assert len(file_costs([finding(f"f{i}.py") for i in range(40)], list(TARGETS), limit=25)["cpu"]) == 25


# -- the command line and the package ------------------------------------------------------------------

def test_html_is_a_registered_format_listed_in_help(capsys):
    assert REPORTERS["html"] == "html_report"
    for command in (["scan", "--help"], [".", "--help"]):  # `audit --help` itself lists the commands
        assert main(command) == 0
        assert re.search(r"<text\|[a-z|-]*\bhtml\b[a-z|-]*>", capsys.readouterr().out), command


def test_audit_writes_the_page(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "report.html"
    assert main(["fixtures/demo-repo", "--format", "html", "--no-cache", "--isolated", "-o", str(out)]) == 0
    assert main(["fixtures/demo-repo", "--format", "json", "--no-cache", "--isolated"]) == 0
    document = json.loads(capsys.readouterr().out)
    data = data_of(out.read_text(encoding="utf-8"))
    assert decode(data) == [shown(f) for f in document["findings"]]
    assert data["root"] == document["root"] and data["tool"] == document["tool"]


def test_a_large_report_stays_compact():
    """Repeated paths and messages cost an index each: well under the JSON report's size."""
    document = bulk_report(2000)
    page = render_html(document)
    assert len(page) < 0.4 * len(json.dumps(document)), (len(page), len(json.dumps(document)))


def test_the_assets_ship_in_the_wheel(tmp_path):
    from hatchling.builders.wheel import WheelBuilder

    (wheel,) = WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"auditor/report/html_assets/report.js", "auditor/report/html_assets/report.css",
            "auditor/report/html_report.py", "auditor/rules/scoring.toml"} <= names
