"""Inline suppressions: `# lockin: ignore[...]` and `# noqa: LK...`, never a bare `# noqa`."""

from __future__ import annotations


def rules_by_line(result):
    return sorted((f.line, f.rule) for f in result.findings)


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
    )
    result = scan_source({"m.py": code}, select=["LK102"])
    assert rules_by_line(result) == [(7, "LK102"), (8, "LK102"), (9, "LK102")]


def test_requirements_suppression(scan_source):
    text = "flash-attn==2.5.8  # lockin: ignore[LK504]\nxformers\n"
    result = scan_source({"requirements.txt": text}, select=["LK504"])
    assert rules_by_line(result) == [(2, "LK504")]


def test_shared_include_is_reported_once(scan_source):
    files = {"requirements.txt": "-r deps/base.lst\n", "requirements-dev.txt": "-r deps/base.lst\n",
             "deps/base.lst": "flash-attn\n"}
    result = scan_source(files, select=["LK504"])
    assert [(f.path, f.line) for f in result.findings] == [("deps/base.lst", 1)]
