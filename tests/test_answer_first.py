"""The answer first (issue 18 item 2): the text report leads with each target's verdict, score and
first blocker (then the components, when the run judged them), the concise report ends on one line
per target and the markdown table carries them; `--target T` narrows every format to what matters
on T."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from auditor import targets
from auditor.cli import main
from auditor.config.settings import Settings
from auditor.gates.judge import GateOutcome
from auditor.pipeline.scan import scan
from auditor.portability.score import compute_scores
from auditor.report import REPORTERS, answer, render
from auditor.report.model import Report

# `.cuda()` raises everywhere but ROCm; the CUDA wheel pin raises only on MPS and degrades elsewhere
# but the CPU (rules/effects); an unused suppression is about no target.
FILES = {
    "train.py": "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\ny = 2  # noqa: LK204\n",
    "requirements.txt": "torch==2.3.0+cu121\n",
    "ok.py": "import torch\nx = torch.ones(2).to(device)\n",
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main([".", "--no-cache", "--isolated", "--color", "never", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_report_leads_with_the_verdict_of_every_target(repo, capsys):
    code, out, _ = run(capsys, "--format", "text")
    lines = out.splitlines()
    every = targets.names()
    assert lines[0].startswith("Does it run there as it is?")
    rows = lines[1:1 + len(every)]
    assert [row.split()[0] for row in rows] == list(every)
    cpu = rows[every.index("cpu")]
    assert cpu.split()[1] == "fails" and "blocked by `.cuda()` calls" in cpu and "(train.py:2, LK102)" in cpu
    rocm = rows[every.index("rocm")]
    assert rocm.split()[1] == "runs-degraded" and "degraded by" in rocm and "(requirements.txt:1, LK501)" in rocm
    assert lines[1 + len(every)].strip().startswith("overall: score ")
    # then the findings, then the tables
    first_finding = next(i for i, line in enumerate(lines) if "LK102" in line and "cuda-method-call" in line)
    assert first_finding > len(every) + 1
    assert lines.index(next(line for line in lines if line.startswith("Portability score"))) > first_finding
    # the scores in the answer are the table's
    scores = json.loads(run(capsys, "--format", "json")[1])["scores"]
    assert f"{scores['cpu']:.1f} (" in cpu


def test_the_answer_is_in_the_first_lines_of_a_big_report(tmp_path, monkeypatch, capsys):
    """However many findings, the verdicts come first: before, they followed every finding."""
    for i in range(60):
        (tmp_path / f"m{i}.py").write_text("import torch\n" + "x = y.cuda()\n" * 10, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = run(capsys, "--format", "text")[1]
    assert out.count("\n") > 1800 and out.splitlines()[1].split()[:2] == ["rocm", "runs"]


def test_concise_ends_on_the_answer_and_markdown_carries_it(repo, capsys):
    lines = run(capsys, "--format", "concise")[1].splitlines()
    every = targets.names()
    assert [line.split(":")[0] for line in lines[-len(every):]] == list(every)
    assert lines[-len(every) - 1].startswith("Found ")
    markdown = run(capsys, "--format", "markdown")[1]
    row = next(line for line in markdown.splitlines() if line.startswith("| cpu |"))
    assert "| fails |" in row and "blocked by `.cuda()` calls" in row


def test_target_narrows_text_concise_and_markdown(repo, capsys):
    whole = json.loads(run(capsys, "--format", "json")[1])
    on_rocm = [f for f in whole["findings"] if f["targets"]["rocm"] != "works" or
               all(v == "works" for v in f["targets"].values())]
    assert {f["rule"] for f in on_rocm} == {"LK501", "LK001"}  # .cuda() and "cuda" run on ROCm
    text = run(capsys, "--format", "text", "--target", "rocm")[1]
    lines = text.splitlines()
    assert lines[1].split()[:2] == ["rocm", "runs-degraded"] and not lines[2].startswith("  ")
    assert "overall: score" not in text and "LK102" not in text and "LK501" in text and "LK001" in text
    hidden = len(whole["findings"]) - len(on_rocm)
    assert f"--target rocm: {hidden} finding(s) that matter only on other targets not listed" in text
    table = text[text.index("Portability score"):]
    assert "│ rocm " in table and "│ cpu " not in table and "│ overall " not in table
    concise = run(capsys, "--format", "concise", "--target", "rocm")[1].splitlines()
    assert concise[-1].startswith("rocm: runs-degraded, score ")
    assert "overall score" not in concise[-2] and f"{hidden} matter only on targets other than rocm" in concise[-2]
    assert sum(1 for line in concise if ": LK" in line) == len(on_rocm)
    markdown = run(capsys, "--format", "markdown", "--target", "rocm")[1]
    assert "| rocm |" in markdown and "| cpu |" not in markdown and "| overall |" not in markdown
    assert "LK102" not in markdown and f"{hidden} findings that matter only on other targets" in markdown


def test_target_narrows_every_machine_format(repo, capsys):
    """Each format lists only the findings that matter on the target."""
    rocm_rules = {"LK501", "LK001"}
    findings = json.loads(run(capsys, "--format", "json", "--target", "rocm")[1])["findings"]
    assert {f["rule"] for f in findings} == rocm_rules
    lines = [json.loads(line) for line in run(capsys, "--format", "json-lines", "--target", "rocm")[1].splitlines()]
    assert {r["rule"] for r in lines} == rocm_rules
    sarif = json.loads(run(capsys, "--format", "sarif", "--target", "rocm")[1])
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == rocm_rules
    github = run(capsys, "--format", "github", "--target", "rocm")[1]
    assert "LK501" in github and "LK102" not in github
    gitlab = json.loads(run(capsys, "--format", "gitlab", "--target", "rocm")[1])
    assert {issue["check_name"] for issue in gitlab} == rocm_rules
    junit = ET.fromstring(run(capsys, "--format", "junit", "--target", "rocm")[1])
    assert {case.get("name").split()[0] for case in junit.iter("testcase")} == rocm_rules | {"gate"}
    html = run(capsys, "--format", "html", "--target", "rocm")[1]
    assert '"targets": ["rocm"]' in html.replace('\\"', '"') or '"targets":["rocm"]' in html
    rdjson = json.loads(run(capsys, "--format", "rdjson", "--target", "rocm")[1])
    assert {d["code"]["value"] for d in rdjson["diagnostics"]} == rocm_rules
    assert set(REPORTERS) == {"text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit", "markdown",
                              "html", "rdjson"}  # a new format must say what narrowing means for it


def test_target_narrows_the_gate_and_statistics(repo, capsys):
    """--fail-on judges what the report shows: on ROCm only the wheel pin (major) and the stale
    suppression (minor) are left."""
    assert run(capsys, "--target", "rocm", "--fail-on", "blocker")[0] == 0
    assert run(capsys, "--target", "rocm", "--fail-on", "major")[0] == 1
    out = run(capsys, "--target", "rocm", "--statistics")[1]
    assert {line.split()[1] for line in out.splitlines()} == {"LK501", "LK001"}


def test_a_baseline_records_every_target_whatever_the_focus(repo, capsys):
    assert run(capsys, "--target", "rocm", "--write-baseline", "b.json")[0] == 0
    rules = {e["rule"] for e in json.loads((repo / "b.json").read_text(encoding="utf-8"))["findings"]}
    assert {"LK102", "LK101", "LK501"} <= rules
    report = json.loads(run(capsys, "--format", "json", "--baseline", "b.json")[1])
    assert report["baseline"]["stale"] == 0 and report["findings"] == []


# -- the components' slot ------------------------------------------------------------------------------

def _report(path, **extra) -> Report:
    settings = Settings(cache=False, jobs=1)
    result = scan([str(path)], settings, base=str(path))
    return Report(result, compute_scores(result.findings), result.findings, result.errors, GateOutcome(), settings,
                  **extra)


def _layered(tmp_path):
    """A package that runs everywhere and an examples folder that hard-codes CUDA."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import torch\n\ndef f(x):\n    return x * 2\n", encoding="utf-8")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run.py").write_text("import torch\nx = torch.ones(2).cuda()\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n[tool.setuptools]\npackages = ["pkg"]\n',
                                             encoding="utf-8")
    return tmp_path


def test_components_follow_the_targets_in_text_and_markdown(tmp_path):
    report = _report(_layered(tmp_path))
    parts = answer.components(report)
    assert {p.name: p.kind for p in parts} == {"pkg": "package", "examples": "examples"}
    examples = next(p for p in parts if p.kind == "examples")
    assert examples.verdicts["cpu"] == "fails" and examples.verdicts["rocm"] == "runs"
    assert report.verdicts["cpu"].verdict == "runs"  # the examples never fail the headline
    out = io.StringIO()
    render("text", report, out)
    text = out.getvalue().splitlines()
    at = text.index("Components (the headline judges what the repository ships):")
    assert at == len(targets.names()) + 2
    assert text[at + 1].strip().startswith("pkg (package, headline") and "examples (examples, beside" in text[at + 2]
    out = io.StringIO()
    render("markdown", report, out)
    markdown = out.getvalue()
    assert "### Components" in markdown
    row = next(r for r in markdown.splitlines() if r.startswith("| examples |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    every = targets.names()
    assert cells[:2] == ["examples", "examples"] and cells[2 + every.index("cpu")] == "fails"
    assert cells[2 + every.index("rocm")] == "runs"
    # narrowed, the components show only the focus targets
    narrowed = _report(tmp_path, focus=("cpu",))
    assert [list(p.verdicts) for p in answer.components(narrowed)] == [["cpu"], ["cpu"]]
    out = io.StringIO()
    render("text", narrowed, out)
    line = next(x for x in out.getvalue().splitlines() if "examples (examples" in x)
    assert "fails on cpu" in line and "rocm" not in line
    # one part only: no section
    out = io.StringIO()
    render("text", _report(repo_of_one(tmp_path / "one")), out)
    assert "Components" not in out.getvalue()


def repo_of_one(path):
    path.mkdir()
    (path / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n", encoding="utf-8")
    return path
