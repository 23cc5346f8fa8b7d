"""auditor.python.scan.parse_module skips libcst's per-node validation while parsing: the trees
must be the very trees libcst.parse_module builds, syntax errors must still be errors, and
validation must be back on for every node built after the parse."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from auditor.checks.registry import all_rules
from auditor.python.scan import parse_module

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = [
    *(example.code for rule in all_rules() for example in (*rule.VALID, *rule.INVALID)
      if example.path.endswith(".py")),
    *(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))),
    "async def f(*a, b=1, **k):\n    return [x async for x in y if (z := x)]\n",
    'x = f"{a!r:>{w}}" "plain" rf"\\x00"\nmatch p:\n    case [1, *rest] if rest: pass\n',
]


def test_same_trees_as_libcst():
    assert len(SOURCES) > 300
    for source in SOURCES:
        ours, theirs = parse_module(source), cst.parse_module(source)
        assert ours.deep_equals(theirs) and ours.code == source


@pytest.mark.parametrize("source", ['print "python 2"\n', "def f(:\n    pass\n", "except Exception, e:\n"])
def test_syntax_errors_are_still_errors(source):
    with pytest.raises(cst.ParserSyntaxError):
        parse_module(source)


def test_validation_is_back_after_the_parse():
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not valid")


@pytest.mark.parametrize("source", ['x = "a" b"b"\n', 'x = b"a" f"b"\n'])
def test_syntax_the_grammar_lets_through_is_an_error_entry(source, scan_source):
    with pytest.raises(cst.CSTValidationError):
        parse_module(source)
    result = scan_source({"mixed.py": "import torch\nmodel.cuda()\n" + source})
    assert [e.kind for e in result.errors] == ["parse"] and "bytes" in result.errors[0].message
    assert not result.findings
