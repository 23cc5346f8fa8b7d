"""The JSON report is a contract (CI gates, baselines, SARIF and outside users read it): its
keys, types and order are pinned here. A change that breaks these tests must bump
auditor.report.json_report.FORMAT_VERSION."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor import TOOL_NAME, __version__
from auditor.cli import main
from auditor.model import CATEGORIES, SEVERITIES
from auditor.report.json_report import FORMAT_VERSION
from auditor.targets import names as target_names

TARGETS = target_names()  # every target of the registry (rules/targets.toml)

CORE = "LK101,LK102,LK103,LK201"
TOP_KEYS = {"tool", "format_version", "targets", "focus", "overall", "incomplete", "scores", "grades", "verdicts", "costs",
            "summary", "run", "findings", "errors", "warnings", "fixes", "root", "scan_root", "gate", "baseline",
            "changed_lines", "suppressed", "components"}
GATE_KEYS = {"passed", "exit_code", "reasons", "checks"}
BASELINE_KEYS = {"path", "new", "known", "stale", "known_errors", "scores", "moved"}  # moved: format 6
FINDING_KEYS = {"rule", "name", "category", "severity", "path", "line", "column", "end_line", "end_column",
                "message", "suggestion", "min_torch", "targets", "snippet", "context", "guard", "cell", "fix", "component"}
# format 6: the repository's parts, shipped ones first (auditor.analysis.components)
COMPONENT_KEYS = {"name", "kind", "paths", "shipped", "findings", "features", "verdicts", "scores"}
FEATURE_KEYS = {"name", "rule", "path", "line", "verdicts"}  # an opt-in NVIDIA-only feature
COMPONENT_KINDS = {"package", "program", "examples", "scripts", "tests", "benchmarks", "docs", "containers", "ci",
                   "other"}
FIX_KEYS = {"applicability", "message", "min_torch", "reason", "edits"}
EDIT_KEYS = {"line", "column", "end_line", "end_column", "content"}
SUMMARY_KEYS = {"files", "files_with_findings", "findings", "errors", "suppressed", "by_category", "by_severity",
                "by_rule", "by_context"}
VERDICTS = {"runs", "runs-degraded", "fails", "unknown"}
# format 5: the targets of the registry (rules/targets.toml), in report order, and the set `overall` averages
PINNED_TARGETS = ["rocm", "tpu", "trainium", "mps", "xpu", "npu", "cpu"]
PINNED_OVERALL = {"name": "core", "version": 1, "members": ["rocm", "tpu", "trainium", "mps", "xpu", "cpu"]}
CONTEXTS = {"guarded", "optional", "backend-module", "own-package", "redundant", "display", "test", "demo", "feature"}
EFFECTS = {"works", "degrades", "raises"}
# format 6: a finding's `guard`, the kinds of the guards behind its context (rules/contexts.toml, "Guard kinds")
GUARD_KINDS = {"availability", "device", "build", "package", "env", "option", "dispatch", "fallback", "extra",
               "integration"}
GRADES = {"A", "B", "C", "D", "F"}


@pytest.fixture
def repo(tmp_path):
    files = {
        "train.py": "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\n",
        "pkg/util.py": ("import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                        "batch = batch.cuda(non_blocking=True)\n"),
        "pkg/a.py": "import torch\nm = M().cuda()\nm2 = M().cuda()\n",
        "clean.py": "import torch\nx = torch.ones(2).to(device)\n",
        "broken.py": "import torch\ndef f(:\n    model.cuda()\n",
    }
    for name, content in files.items():
        path = tmp_path / "repo" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return tmp_path / "repo"


def report_of(path: Path, capsys, *extra: str, expect: int = 0) -> dict:
    """The JSON report of `audit PATH` run from PATH's folder (paths are relative to the cwd)."""
    cache = [] if "--cache-dir" in extra else ["--no-cache"]
    here = os.getcwd()
    os.chdir(path if path.is_dir() else path.parent)
    try:
        code = main([".", "--format", "json", "--select", CORE, "--isolated", *cache, *extra])
    finally:
        os.chdir(here)
    out, _ = capsys.readouterr()
    assert code == expect
    return json.loads(out)


def test_top_level(repo, capsys):
    report = report_of(repo, capsys)
    assert set(report) == TOP_KEYS
    assert report["root"] == str(repo) and os.path.isabs(report["root"])  # finding paths are relative to it
    assert report["scan_root"] == str(repo)
    assert report["gate"] == {"passed": True, "exit_code": 0, "reasons": [], "checks": []}
    assert report["baseline"] is None and report["changed_lines"] is None and report["suppressed"] == []
    assert report["tool"] == {"name": TOOL_NAME, "version": __version__}
    assert report["format_version"] == FORMAT_VERSION == 9
    assert report["targets"] == list(TARGETS) == PINNED_TARGETS
    assert report["focus"] is None  # format 6: no --target, every target
    assert report["overall"] == PINNED_OVERALL  # adding a target to the registry moves no `overall` gate
    assert report["incomplete"] is None
    assert isinstance(report["warnings"], list) and all(isinstance(w, str) for w in report["warnings"])


def test_scores_grades_costs(repo, capsys):
    report = report_of(repo, capsys)
    scores = report["scores"]
    assert set(scores) == {"overall", *TARGETS}
    assert all(isinstance(v, float | int) and 0 <= v <= 100 for v in scores.values())
    members = report["overall"]["members"]
    assert scores["overall"] == round(sum(scores[t] for t in members) / len(members), 1)
    assert scores["rocm"] == 100 and scores["cpu"] < 100  # the core rules work on ROCm only
    assert set(report["grades"]) == {"overall", *TARGETS}
    assert set(report["grades"].values()) <= GRADES
    costs = report["costs"]
    assert set(costs) == set(TARGETS)
    assert costs["rocm"] == []
    for target in TARGETS:
        for cost in costs[target]:
            assert set(cost) == {"rule", "name", "count", "files", "points"}
            assert isinstance(cost["rule"], str) and isinstance(cost["name"], str)
            assert isinstance(cost["count"], int) and cost["count"] >= 1
            assert isinstance(cost["files"], int) and 1 <= cost["files"] <= cost["count"]
            assert isinstance(cost["points"], float | int) and cost["points"] >= 0
        points = [c["points"] for c in costs[target]]
        assert points == sorted(points, reverse=True)


def test_summary_counts(repo, capsys):
    report = report_of(repo, capsys)
    summary = report["summary"]
    assert set(summary) == SUMMARY_KEYS
    assert summary["files"] == 5
    assert report["run"] == {"files_parsed": 4, "files_cached": 0}  # clean.py never gets past the prefilter
    assert summary["findings"] == len(report["findings"]) and summary["errors"] == len(report["errors"]) == 1
    assert summary["files_with_findings"] == len({f["path"] for f in report["findings"]}) == 3
    assert set(summary["by_category"]) == set(CATEGORIES)  # every category and severity, even at zero
    assert set(summary["by_severity"]) == set(SEVERITIES)
    assert summary["by_category"]["kernel"] == 0 and summary["by_category"]["dependency"] == 0
    assert sum(summary["by_category"].values()) == sum(summary["by_severity"].values()) == summary["findings"]
    assert summary["by_rule"] == {"LK101": 1, "LK102": 4, "LK103": 1}  # LK103 covers its own condition
    assert list(summary["by_rule"]) == sorted(summary["by_rule"])  # the writer sorts every object's keys
    assert summary["by_context"] == {"main": 6}  # finding counts per context; "main" for none


def test_verdicts(repo, capsys):
    """`verdicts`: per target, would the code run there as it is, and why (reasons point at findings)."""
    report = report_of(repo, capsys)
    verdicts = report["verdicts"]
    assert set(verdicts) == set(TARGETS)
    for verdict in verdicts.values():
        assert set(verdict) == {"verdict", "reasons"}
        assert verdict["verdict"] in VERDICTS
        assert isinstance(verdict["reasons"], list) and len(verdict["reasons"]) <= 5
        for reason in verdict["reasons"]:
            assert set(reason) == {"rule", "path", "line", "why"}
            assert isinstance(reason["rule"], str) and isinstance(reason["path"], str) and isinstance(reason["why"], str)
            assert isinstance(reason["line"], int) and reason["line"] >= 1
            assert any(f["rule"] == reason["rule"] and f["path"] == reason["path"] and f["line"] == reason["line"]
                       for f in report["findings"])
        assert (verdict["reasons"] == []) == (verdict["verdict"] == "runs")
    # `.cuda()` and a "cuda" device on the main path: fails everywhere but ROCm, which runs them
    assert verdicts["rocm"] == {"verdict": "runs", "reasons": []}
    assert verdicts["cpu"]["verdict"] == "fails"
    assert [(r["rule"], r["path"], r["line"]) for r in verdicts["cpu"]["reasons"]] == [
        ("LK102", "pkg/a.py", 2), ("LK101", "train.py", 3)]  # most severe first, then by place
    assert verdicts["cpu"]["reasons"][0]["why"] == "`.cuda()` calls: 4 findings in 3 files"


def test_target_narrows_the_report(repo, capsys):
    """Format 6: `--target` narrows `targets`, the per-target objects and the findings to what matters
    there; `overall` stays in `scores` and `grades`, and each finding's own `targets` stays whole."""
    whole = report_of(repo, capsys)
    report = report_of(repo, capsys, "--target", "cpu,mps")
    assert report["focus"] == ["cpu", "mps"] and report["targets"] == ["mps", "cpu"]  # registry order
    assert set(report["scores"]) == set(report["grades"]) == {"overall", "mps", "cpu"}
    assert report["scores"] == {k: whole["scores"][k] for k in ("overall", "mps", "cpu")}
    assert set(report["verdicts"]) == set(report["costs"]) == {"mps", "cpu"}
    assert report["findings"] == [f for f in whole["findings"]
                                  if f["targets"]["cpu"] != "works" or f["targets"]["mps"] != "works"]
    assert all(set(f["targets"]) == set(TARGETS) for f in report["findings"])
    # ROCm runs all of it: narrowed there, nothing is reported, the score and verdict stay
    rocm = report_of(repo, capsys, "--target", "rocm")
    assert rocm["findings"] == [] and rocm["summary"]["findings"] == 0
    assert rocm["verdicts"] == {"rocm": {"verdict": "runs", "reasons": []}} and rocm["scores"]["rocm"] == 100
    assert report_of(repo, capsys, "--target", "overall,cpu")["focus"] is None  # overall: every target


def test_empty_repository_still_has_every_key(tmp_path, capsys):
    report = report_of(tmp_path, capsys)
    assert report["findings"] == [] and report["errors"] == []
    assert report["summary"]["by_category"] == {c: 0 for c in CATEGORIES}
    assert report["summary"]["by_severity"] == {s: 0 for s in SEVERITIES}
    assert report["summary"]["by_rule"] == {}
    assert report["scores"] == {"overall": 100.0, **{t: 100.0 for t in TARGETS}}
    assert report["costs"] == {t: [] for t in TARGETS}
    assert report["verdicts"] == {t: {"verdict": "runs", "reasons": []} for t in TARGETS}
    assert report["summary"]["by_context"] == {}


def test_findings(repo, capsys):
    findings = report_of(repo, capsys)["findings"]
    assert findings
    for f in findings:
        assert set(f) == FINDING_KEYS
        for key in ("rule", "name", "category", "severity", "path", "message", "suggestion", "snippet"):
            assert isinstance(f[key], str), key
        assert f["category"] in CATEGORIES and f["severity"] in SEVERITIES
        assert f["min_torch"] is None or isinstance(f["min_torch"], str)
        for key in ("line", "column", "end_line", "end_column"):
            assert isinstance(f[key], int) and not isinstance(f[key], bool) and f[key] >= 1, key
        assert (f["end_line"], f["end_column"]) > (f["line"], f["column"])
        assert f["path"] in {"train.py", "pkg/util.py", "pkg/a.py"}  # POSIX, relative, no "./"
        assert set(f["targets"]) == set(TARGETS) and set(f["targets"].values()) <= EFFECTS
        assert f["message"] and f["suggestion"] and f["snippet"]
        assert f["fix"] is None or _valid_fix(f["fix"])
        assert f["context"] is None or set(f["context"].split("+")) <= CONTEXTS
        assert f["guard"] is None or (set(f["guard"].split("+")) <= GUARD_KINDS and f["context"] is not None)
    keys = [(f["path"], f["line"], f["column"], f["rule"]) for f in findings]
    assert keys == sorted(keys)
    first = next(f for f in findings if f["path"] == "pkg/a.py")
    assert first["rule"] == "LK102" and first["name"] == "cuda-method-call" and first["category"] == "device"
    assert first["line"] == first["end_line"] == 2 and first["snippet"] == "m = M().cuda()"
    assert "cuda" in first["snippet"][first["column"] - 1:first["end_column"] - 1]  # 1-based, end exclusive


def test_finding_guard_kinds(tmp_path, capsys):
    """format 6: `guard` names the kinds of the guards that decided a finding's context."""
    (tmp_path / "a.py").write_text("import torch\ndef f(m, args):\n    if torch.cuda.is_available():\n"
                                   "        m = m.cuda()\n    if args.cuda:\n        m = m.cuda()\n"
                                   "    return m.cuda()\n", encoding="utf-8")
    found = {f["line"]: f for f in report_of(tmp_path, capsys)["findings"] if f["rule"] == "LK102"}
    assert found[4]["guard"] == "availability" and found[6]["guard"] == "option"
    assert found[7]["guard"] is None and found[7]["context"] is None


def _valid_fix(fix: dict) -> bool:
    assert set(fix) == FIX_KEYS
    assert fix["applicability"] in {"safe", "unsafe", "display"} and isinstance(fix["message"], str)
    assert fix["min_torch"] is None or isinstance(fix["min_torch"], str)
    assert fix["reason"] is None or (isinstance(fix["reason"], str) and fix["applicability"] == "display")
    assert fix["edits"] and all(set(e) == EDIT_KEYS for e in fix["edits"])
    for edit in fix["edits"]:
        assert all(isinstance(edit[k], int) and edit[k] >= 1 for k in EDIT_KEYS - {"content"})
        assert (edit["end_line"], edit["end_column"]) >= (edit["line"], edit["column"]) and isinstance(edit["content"], str)
    return True


def test_fixes_in_the_report(repo, capsys):
    """`fix` on each finding that has one: safe/unsafe/display, text edits in the finding's coordinates."""
    findings = report_of(repo, capsys, "--torch-version", "2.13")["findings"]
    fixes = {(f["path"], f["line"], f["rule"]): f["fix"] for f in findings}
    cuda = fixes[("pkg/a.py", 2, "LK102")]
    assert cuda["applicability"] == "unsafe" and cuda["min_torch"] == "2.7" and cuda["reason"] is None
    assert [e["content"] for e in cuda["edits"]] == ["to", "(torch.accelerator.current_accelerator())"]
    held = fixes[("train.py", 2, "LK102")]  # the "cuda" on the next line stays: not CUDA-clean
    assert held["applicability"] == "display" and "CUDA-clean" in held["reason"]
    assert fixes[("train.py", 3, "LK101")] is None


def test_errors(repo, capsys):
    errors = report_of(repo, capsys)["errors"]
    assert len(errors) == 1
    assert set(errors[0]) == {"path", "kind", "message"}
    assert errors[0]["path"] == "broken.py" and errors[0]["kind"] == "parse" and errors[0]["message"]


def test_paths_are_relative_to_the_working_directory(repo, capsys, monkeypatch):
    """As ruff prints them: the same file has the same path however audit is called."""
    monkeypatch.chdir(repo.parent)
    for args in (["repo/pkg"], ["repo/pkg/a.py", "repo/pkg/util.py"], ["repo"]):
        code = main([*args, "--format", "json", "--select", CORE, "--no-cache", "--isolated"])
        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["root"] == str(repo.parent)
        assert report["scan_root"] in (str(repo / "pkg"), str(repo.parent), str(repo))
        assert {"repo/pkg/a.py", "repo/pkg/util.py"} <= {f["path"] for f in report["findings"]}
        assert all(f["path"].startswith("repo/") for f in report["findings"])
    monkeypatch.chdir(repo / "pkg")
    code = main(["../train.py", "--format", "json", "--select", CORE, "--no-cache", "--isolated"])
    assert {f["path"] for f in json.loads(capsys.readouterr().out)["findings"]} == {"../train.py"}


def test_gate_baseline_and_suppressed_shape(repo, capsys, tmp_path):
    (repo / "pkg" / "a.py").write_text("import torch\nm = M().cuda()  # noqa: LK102\nm2 = M().cuda()\n", encoding="utf-8")
    base = tmp_path / "base.json"
    report_of(repo, capsys, "--write-baseline", str(base))
    (repo / "new.py").write_text("import torch\nx = y.cuda()\n", encoding="utf-8")
    report = report_of(repo, capsys, "--baseline", str(base), "--fail-on", "major", "--show-suppressed", expect=1)
    gate = report["gate"]
    assert set(gate) == GATE_KEYS and gate["passed"] is False and gate["exit_code"] == 1
    # broken.py is in the baseline: it no longer fails the gate; the new finding does.
    assert gate["checks"] == ["fail-on major"] and gate["reasons"] == ["1 finding(s) at or above major (--fail-on)"]
    baseline = report["baseline"]
    assert set(baseline) == BASELINE_KEYS and baseline["path"] == str(base)
    assert baseline["new"] == 1 and baseline["stale"] == 0 and baseline["known_errors"] == 1 and baseline["moved"] == []
    assert set(baseline["scores"]) == {"overall", *TARGETS}
    assert [f["path"] for f in report["findings"]] == ["new.py"]  # only what is new
    assert report["summary"]["findings"] == 1 and report["summary"]["suppressed"] == 1
    reasons = {s["suppressed_by"] for s in report["suppressed"]}
    assert reasons == {"inline", "baseline"}
    for entry in report["suppressed"]:
        assert set(entry) == FINDING_KEYS | {"suppressed_by"}


def test_byte_identical_runs(repo, tmp_path, capsys):
    outputs = []
    for index in range(2):
        target = tmp_path / f"run{index}.json"
        assert main([str(repo), "--format", "json", "--select", CORE, "--no-cache", "-o", str(target)]) == 0
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].endswith(b"}\n") and b"\r" not in outputs[0]


def test_warm_cache_changes_nothing_but_the_run_object(repo, tmp_path):
    """A run served from the cache writes the same bytes, but for the run-specific `run`."""
    outputs = []
    for name in ("cold", "warm"):
        target = tmp_path / f"{name}.json"
        assert main([str(repo), "--format", "json", "--select", CORE, "--cache-dir", str(tmp_path / "cache"),
                     "-o", str(target)]) == 0
        outputs.append(target.read_text(encoding="utf-8"))
    cold, warm = (json.loads(text) for text in outputs)
    assert cold["run"] == {"files_parsed": 4, "files_cached": 0}
    assert warm["run"] == {"files_parsed": 0, "files_cached": 5}
    strip = [text.replace(json.dumps(report["run"], separators=(", ", ": "), sort_keys=True), "RUN")
             for text, report in zip(outputs, (cold, warm), strict=True)]
    assert strip[0] == strip[1] and "RUN" in strip[0]


def test_finding_lines_are_exactly_what_json_dumps_gives():
    """render_json lays findings out with its own memoising encoder; it must equal the json module."""
    from auditor.config.settings import Settings
    from auditor.model import Edit, Finding, Fix
    from auditor.pipeline.scan import scan
    from auditor.report.json_report import FindingLines

    findings = scan(["fixtures/demo-repo"], Settings(cache=False, jobs=1)).findings
    assert len(findings) > 10 and any(f.min_torch is None for f in findings) and any(f.min_torch for f in findings)
    odd = "é \u2028 \"q\" back\\slash \x00\x1f\t\n 🙂 \ud800"
    findings.append(Finding(odd, 7, 0, 12, 3, "LK101", odd, "device", "major", odd, odd,
                            {"z": odd, "a": "raises"}, odd, odd))
    findings.append(Finding("p.py", 1, 1, 1, 2, "LK101", "n", "device", "major", "m", "", {}, None, ""))
    fix = Fix("display", odd, (Edit(1, 2, 1, 9, odd), Edit(3, 1, 4, 1, "")), "2.7", odd)
    findings.append(Finding("n.ipynb", 2, 1, 2, 5, "LK102", "n", "device", "major", "m", "s", {}, "2.7", "x",
                            context="guarded", cell=3, fix=fix))
    def component(path: str) -> str | None:
        return None if path == "p.py" else odd if path == odd else "demo"

    lines = FindingLines(component)
    for finding in findings + findings:  # the second pass is served from the memo
        expected = json.dumps({**finding.to_dict(), "component": component(finding.path)}, sort_keys=True,
                              ensure_ascii=False, separators=(", ", ": "))
        assert lines(finding) == expected
    assert set(findings[0].to_dict()) | {"component"} == FINDING_KEYS


def test_components(repo, capsys):
    report = report_of(repo, capsys)
    components = report["components"]
    assert components and all(set(c) == COMPONENT_KEYS for c in components)
    assert all(c["kind"] in COMPONENT_KINDS and isinstance(c["shipped"], bool) for c in components)
    assert [c["shipped"] for c in components] == sorted((c["shipped"] for c in components), reverse=True)
    for c in components:
        assert set(c["verdicts"]) == set(TARGETS) and set(c["scores"]) == {*TARGETS, "overall"}
        assert all(v["verdict"] in VERDICTS for v in c["verdicts"].values())
        assert all(isinstance(p, str) for p in c["paths"])
        assert all(set(f) == FEATURE_KEYS and set(f["verdicts"]) == set(TARGETS) for f in c["features"])
    names = {c["name"] for c in components}
    assert all(f["component"] in names for f in report["findings"])
    assert sum(c["findings"] for c in components) == len(report["findings"])


def test_overall_averages_the_configured_targets(repo, capsys):
    (repo / "lockin-auditor.toml").write_text('overall-targets = ["rocm", "XPU"]\n', encoding="utf-8")
    here = os.getcwd()
    os.chdir(repo)
    try:
        code = main([".", "--format", "json", "--select", CORE, "--no-cache"])
    finally:
        os.chdir(here)
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["overall"] == {"name": "configured", "version": None, "members": ["rocm", "xpu"]}
    assert report["scores"]["overall"] == round((report["scores"]["rocm"] + report["scores"]["xpu"]) / 2, 1)


def test_overall_targets_must_name_targets(repo, capsys):
    (repo / "lockin-auditor.toml").write_text('overall-targets = ["overall", "tpu"]\n', encoding="utf-8")
    code = main([str(repo), "--format", "json", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "'overall-targets' names unknown target 'overall'" in err


def test_fixes_is_null_without_fix_and_says_per_file_what_fix_made_cuda_clean(repo, capsys):
    """Format 9: `fixes`, with --fix / --diff: the device module created, and per file whether it is
    CUDA-clean now, with the fixes that made it so or the first blockers."""
    assert report_of(repo, capsys)["fixes"] is None
    (repo / "broken.py").unlink()
    (repo / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "pyproject.toml").write_text('[project]\nname = "pkg"\n', encoding="utf-8")  # a package, not scripts
    fixes = report_of(repo, capsys, "--fix", "--torch-version", "2.7")["fixes"]
    assert (fixes["mode"], fixes["unsafe"], fixes["created"]) == ("fix", False, [{"path": "pkg/device_choice.py",
                                                                                  "written": True}])
    assert fixes["device_owner"] == {"module": "pkg.device_choice", "function": "get_device",
                                     "path": "pkg/device_choice.py", "created": True, "kind": "function"}
    files = {f["path"]: f for f in fixes["files"]}
    assert files["pkg/a.py"] == {"path": "pkg/a.py", "cuda_clean_before": False, "cuda_clean": True,
                                 "fixed": {"LK102": 2}, "blockers": [], "blocker_count": 0}
    assert files["train.py"]["cuda_clean"] and files["train.py"]["fixed"] == {"LK101": 1, "LK102": 1}
    assert fixes["files_made_cuda_clean"] == 3 and fixes["files_not_cuda_clean"] == 0
    assert "clean.py" not in files  # nothing raised there, before or after


def test_fixes_names_the_first_blockers_of_a_file_still_tied(tmp_path, capsys):
    (tmp_path / "train.py").write_text("import torch\nx = y.cuda()\nassert x.device.type == 'cuda'\n"
                                       "torch.cuda.synchronize()\n", encoding="utf-8")
    fixes = report_of(tmp_path, capsys, "--fix")["fixes"]
    (item,) = fixes["files"]
    assert fixes["mode"] == "fix" and not item["cuda_clean"] and item["fixed"] == {"LK102": 1}
    assert [(b["rule"], b["line"]) for b in item["blockers"]] == [("LK101", 4)] and item["blocker_count"] == 1
