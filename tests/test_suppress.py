"""Suppressions: `# lockin: ignore[...]`, `# noqa: LK...`, the file-level form, per-file-ignores,
the rule that reports suppressions silencing nothing (LK001, with a fix that deletes them),
--show-suppressed and --add-noqa."""

from __future__ import annotations

import json

import pytest

from auditor.cli import main


def rules_by_line(result):
    return sorted((f.line, f.rule) for f in result.findings)


def apply_fix(text: str, finding) -> str:
    """Apply a finding's text edits (1-based, end exclusive) the way --fix will."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(finding.fix.edits, key=lambda e: (e.line, e.column), reverse=True):
        assert edit.line == edit.end_line
        line = lines[edit.line - 1]
        lines[edit.line - 1] = line[:edit.column - 1] + edit.content + line[edit.end_column - 1:]
    return "".join(lines)


def test_python_suppressions(scan_source):
    code = (
        "import torch\n"
        "a = m.cuda()  # lockin: ignore[LK102]\n"
        "b = m.cuda()  # lockin: ignore[cuda-method-call]\n"
        "c = m.cuda()  # lockin: ignore\n"
        "d = m.cuda()  # noqa: LK102\n"
        "e = m.cuda()  # noqa: E501, LK102\n"
        "f = m.cuda()  # noqa\n"
        "g = m.cuda()  # lockin: ignore[LK101]\n"
        "h = m.cuda()  # noqa: F401\n"
        's = "# lockin: ignore"; i = m.cuda()\n'
        'j = m.cuda(); t = """# noqa: LK102"""\n'
        "k = m.cuda()  # LOCKIN: IGNORE[lk102]\n"
    )
    result = scan_source({"m.py": code}, select=["LK102"])
    # A bare noqa, another rule's code and text inside strings silence nothing.
    assert rules_by_line(result) == [(7, "LK102"), (8, "LK102"), (9, "LK102"), (10, "LK102"), (11, "LK102")]
    assert sorted((f.line, how) for f, how in result.suppressed) == [
        (2, "inline"), (3, "inline"), (4, "inline"), (5, "inline"), (6, "inline"), (12, "inline")]


def test_file_level_suppression(scan_source):
    code = "# lockin: ignore-file[LK102, cuda-synchronize]\nimport torch\nx = m.cuda()\ntorch.cuda.synchronize()\n" \
           "y = torch.zeros(1, device='cuda')\n"
    result = scan_source({"m.py": code}, select=["LK101", "LK102", "LK204"])
    assert rules_by_line(result) == [(5, "LK101")]
    assert sorted((f.rule, how) for f, how in result.suppressed) == [("LK102", "file"), ("LK204", "file")]
    everything = scan_source({"n.py": "import torch\n# lockin: ignore-file\nx = m.cuda()\n"}, select=["LK102"])
    assert everything.findings == []  # n.py is silenced whole, m.py's LK102 by its own directive
    assert ("n.py", "file") in {(f.path, how) for f, how in everything.suppressed}
    # Written after code on the same line it is not a file-level directive at all.
    trailing = scan_source({"o.py": "import torch\nx = m.cuda()  # lockin: ignore-file\n"}, select=["LK102"])
    assert ("o.py", 2) in {(f.path, f.line) for f in trailing.findings}


def test_requirements_suppression(scan_source):
    text = "flash-attn==2.5.8  # lockin: ignore[LK504]\nxformers\n"
    result = scan_source({"requirements.txt": text}, select=["LK504"])
    assert rules_by_line(result) == [(2, "LK504")]


def test_cuda_sources_take_slash_comments(scan_source):
    silenced = scan_source({"k.cu": "// lockin: ignore-file[LK401]\n__global__ void k() {}\n"}, select=["LK401"])
    assert silenced.findings == [] and [f.rule for f, _ in silenced.suppressed] == ["LK401"]


def test_shared_include_is_reported_once(scan_source):
    files = {"requirements.txt": "-r deps/base.lst\n", "requirements-dev.txt": "-r deps/base.lst\n",
             "deps/base.lst": "flash-attn\n"}
    result = scan_source(files, select=["LK504"])
    assert [(f.path, f.line) for f in result.findings] == [("deps/base.lst", 1)]


# -- LK001 unused-suppression -------------------------------------------------------------------------

UNUSED = [
    # (line, what the fix leaves)
    ("x = 1  # lockin: ignore[LK102]\n", "x = 1\n"),
    ("x = 1  # noqa: LK102\n", "x = 1\n"),
    ("x = 1  # noqa: E501, LK102\n", "x = 1  # noqa: E501\n"),
    ("x = m.cuda()  # noqa: LK102, LK101\n", "x = m.cuda()  # noqa: LK102\n"),
    ("x = 1  # lockin: ignore[LK102] -- old\n", "x = 1  # -- old\n"),
    ("x = m.cuda()  # lockin: ignore[LK101, LK102]\n", "x = m.cuda()  # lockin: ignore[LK102]\n"),
]


@pytest.mark.parametrize(("line", "fixed"), UNUSED)
def test_unused_suppressions_and_their_fix(scan_source, line, fixed):
    text = "import torch\n" + line
    result = scan_source({"m.py": text}, select=["LK001", "LK101", "LK102"])
    unused = [f for f in result.findings if f.rule == "LK001"]
    assert len(unused) == 1 and unused[0].line == 2 and unused[0].fix.applicability == "safe"
    assert "unused suppression" in unused[0].message
    assert apply_fix(text, unused[0]) == "import torch\n" + fixed
    again = scan_source({"m.py": apply_fix(text, unused[0])}, select=["LK001", "LK101", "LK102"])
    assert not [f for f in again.findings if f.rule == "LK001"]


def test_unknown_codes_are_reported_with_the_nearest_spelling(scan_source):
    result = scan_source({"m.py": "import torch\nx = m.cuda()  # lockin: ignore[LK102, cuda-metod-call]\n"
                                  "y = m.cuda()  # noqa: LK1O2\n"}, select=["LK001", "LK102"])
    messages = sorted(f.message for f in result.findings if f.rule == "LK001")
    assert messages == ["unknown rule 'LK1O2' (did you mean 'LK102'?).",
                        "unknown rule 'cuda-metod-call' (did you mean 'cuda-method-call'?)."]
    assert [f.line for f in result.findings if f.rule == "LK102"] == [3]


def test_unused_judged_only_for_rules_that_ran_and_never_for_other_linters(scan_source):
    code = "import torch\nx = 1  # noqa: LK204, F401, E501\n"
    assert not [f for f in scan_source({"m.py": code}, select=["LK001", "LK102"]).findings if f.rule == "LK001"]
    assert [f.rule for f in scan_source({"m.py": code}, select=["LK001", "LK204"]).findings] == ["LK001"]
    assert scan_source({"m.py": code}, select=["LK204"]).findings == []  # LK001 not selected


def test_unused_in_a_file_the_prefilter_rules_out(scan_source):
    """A file without any lock-in token is never parsed; its stale comment is still found."""
    result = scan_source({"clean.py": "import os\nx = os.getcwd()  # lockin: ignore[LK102]\n"})
    assert [(f.rule, f.line, f.column) for f in result.findings] == [("LK001", 2, 35)]
    assert result.files_parsed == 0


def test_lk001_can_be_silenced_by_naming_it(scan_source):
    code = "import torch\nx = 1  # lockin: ignore[LK102, unused-suppression]\n"
    result = scan_source({"m.py": code}, select=["LK001", "LK102"])
    assert result.findings == [] and [f.rule for f, _ in result.suppressed] == ["LK001"]


def test_cache_keeps_suppressed_findings(scan_source):
    files = {"m.py": "import torch\nx = m.cuda()  # noqa: LK102\ny = 1  # noqa: LK102\n"}
    cold = scan_source(files, select=["LK001", "LK102"], cache=True, jobs=1)
    warm = scan_source({}, select=["LK001", "LK102"], cache=True, jobs=1)
    assert warm.files_cached == 1 and warm.files_parsed == 0
    assert warm.findings == cold.findings and warm.suppressed == cold.suppressed and len(cold.suppressed) == 1


# -- through the CLI: per-file-ignores, scores, --show-suppressed, --add-noqa ---------------------------

@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "tests").mkdir()
    (tmp_path / "train.py").write_text("import torch\nm = M().cuda()  # noqa: LK102\nx = y.cuda()\n", encoding="utf-8")
    (tmp_path / "tests" / "test_x.py").write_text("import torch\nm = M().cuda()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_json(capsys, *args):
    code = main([".", "--format", "json", "--no-cache", "--select", "LK001,LK102", *args])
    return code, json.loads(capsys.readouterr().out)


def test_per_file_ignores_and_scores(repo, capsys):
    (repo / "pyproject.toml").write_text('[tool.lockin-auditor.per-file-ignores]\n"tests/**" = ["LK1"]\n',
                                         encoding="utf-8")
    code, report = run_json(capsys)
    assert code == 0 and [(f["path"], f["line"]) for f in report["findings"]] == [("train.py", 3)]
    assert report["summary"]["suppressed"] == 2
    _, everything = run_json(capsys, "--isolated")
    assert len(everything["findings"]) == 2
    # suppressed findings cost nothing: the tests component's score; the headline never counts tests
    tests_score = {doc_id: next(c["scores"]["cpu"] for c in doc["components"] if c["name"] == "tests")
                   for doc_id, doc in (("report", report), ("everything", everything))}
    assert tests_score["report"] > tests_score["everything"]
    assert report["scores"]["cpu"] == everything["scores"]["cpu"]
    _, shown = run_json(capsys, "--show-suppressed")
    assert sorted((s["path"], s["suppressed_by"]) for s in shown["suppressed"]) == [
        ("tests/test_x.py", "per-file-ignores"), ("train.py", "inline")]


def test_show_suppressed_in_text_and_concise(repo, capsys):
    main([".", "--no-cache", "--select", "LK102", "--show-suppressed", "--format", "concise"])
    out = capsys.readouterr().out
    assert "train.py:2:9: LK102" in out and "(suppressed: inline)" in out
    main([".", "--no-cache", "--select", "LK102", "--show-suppressed"])
    out = capsys.readouterr().out
    assert "1 suppressed finding(s)" in out and "[inline]" in out


def test_add_noqa_then_the_run_is_clean(repo, capsys):
    (repo / "tricky.py").write_text(
        'import torch\nx = y.cuda(); s = """a\nb"""\nz = w.cuda() \\\n    + 1\nq = v.cuda()  # noqa: E501\n'
        "p = t.cuda()  # lockin: ignore[LK101]\n", encoding="utf-8")
    (repo / "requirements.txt").write_text("flash-attn==2.5\ntorch\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = [\n  "flash-attn",\n]\n',
                                         encoding="utf-8")
    before = (repo / "tricky.py").read_text(encoding="utf-8")
    assert main([".", "--no-cache", "--isolated", "--add-noqa", "--select", "LK102,LK504"]) == 0
    err = capsys.readouterr().err
    tricky = (repo / "tricky.py").read_text(encoding="utf-8")
    assert "x = y.cuda(); s = \"\"\"a\nb\"\"\"\n" in tricky  # its line ends inside a string: left alone
    assert "z = w.cuda() \\\n" in tricky  # a continuation: a comment would end it
    assert "q = v.cuda()  # noqa: E501, LK102\n" in tricky
    assert "p = t.cuda()  # lockin: ignore[LK101, LK102]\n" in tricky
    assert tricky != before and "added 6 suppression comment(s) in 5 file(s)" in err
    assert (repo / "requirements.txt").read_text(encoding="utf-8") == "flash-attn==2.5  # noqa: LK504\ntorch\n"
    assert '  "flash-attn",  # noqa: LK504\n' in (repo / "pyproject.toml").read_text(encoding="utf-8")
    code, report = run_json(capsys, "--isolated", "--select", "LK102,LK504")
    assert sorted((f["path"], f["line"]) for f in report["findings"]) == [("tricky.py", 2), ("tricky.py", 4)]


def test_suppression_uses_the_comment_syntax_of_the_kind(scan_source):
    """The marker comes from the file-kind registry: `//` in CUDA, where `#` is no comment."""
    result = scan_source({"a.cu": "__global__ void j() {}  // lockin: ignore[LK401]\n",
                          "b.cu": "__global__ void j() {}  # lockin: ignore[LK401]\n"}, select=["LK401"])
    assert [(f.path, f.line) for f in result.findings] == [("b.cu", 1)]


MALFORMED = [
    ("m.cuda()  # noqa LK102", "m.cuda()  # noqa: LK102"),
    ("m.cuda()  # noqa : LK102", "m.cuda()  # noqa: LK102"),
    ("m.cuda()  # NOQA   LK102, LK101", "m.cuda()  # NOQA: LK102, LK101"),
    ("m.cuda()  #noqa LK102", "m.cuda()  #noqa: LK102"),
]


@pytest.mark.parametrize(("line", "fixed"), MALFORMED)
def test_a_malformed_noqa_is_reported_and_silences_nothing(scan_source, line, fixed):
    """As ruff warns about `# noqa` without its colon, a malformed directive naming our codes is
    not passed over in silence: it silences nothing, and LK001 says how to write it."""
    text = f"import torch\nx = {line}\n"
    result = scan_source({"m.py": text}, select=["LK001", "LK102"])
    assert [f.rule for f in result.findings if f.rule == "LK102"] == ["LK102"] and result.suppressed == []
    malformed = [f for f in result.findings if f.rule == "LK001"]
    assert len(malformed) == 1 and "malformed suppression" in malformed[0].message
    assert "silences nothing" in malformed[0].message and malformed[0].fix.applicability == "safe"
    assert apply_fix(text, malformed[0]) == f"import torch\nx = {fixed}\n"
    again = scan_source({"m.py": apply_fix(text, malformed[0])}, select=["LK001", "LK102"])
    assert again.findings == []  # (LK101 did not run: its item is not judged)
    assert [f.rule for f, _ in again.suppressed] == ["LK102"]


def test_other_linters_noqa_and_text_are_not_malformed_suppressions(scan_source):
    code = ("import torch\n"
            "a = m.cuda()  # noqa F401\n"          # flake8's codes: not ours to judge
            "b = 1  # noqa\n"
            's = "# noqa LK102"; c = 2\n'          # in a string, not a comment
            "d = 1  # this is noqa LK102 territory? no: a colon-less mention after other text\n")
    result = scan_source({"m.py": code}, select=["LK001", "LK102"])
    assert [(f.line, f.rule) for f in result.findings] == [(2, "LK102")]
