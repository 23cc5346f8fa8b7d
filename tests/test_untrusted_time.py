"""Bounded time per file, whatever its shape (issue 20: D6, D7, D19 here; the readers' and the
configuration's worst cases beside them). Each worst case is timed against an ordinary input of
the same size with the same findings (tests/test_untrusted.py's ratio helper), never absolutely."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_untrusted import errors_of, findings_of, ratio, run_scan, write

SYNC = "import torch\ntorch.cuda.synchronize()\n"
CHECK = "torch.cuda.is_available()"


def scan_of(tmp_path: Path, name: str, text: str, folder: str | None = None):
    root = tmp_path / (folder or name.replace(".", "_"))
    write(root, {name: text})
    return lambda: run_scan(root)


def nested(open_: str, close: str, depth: int) -> str:
    return open_ * depth + "1" + close * depth


@pytest.mark.parametrize(("shape", "pattern"), [
    ("list", nested("[", "]", 40)), ("tuple", nested("(", ")", 40)), ("class", nested("A(", ")", 30)),
    ("mapping", nested("{1: ", "}", 24)), ("mixed", nested("[{1: (", ")}]", 8)),
    ("siblings", "[" + ", ".join([nested("[", "]", 12)] * 40) + "]"),
])
def test_deeply_nested_case_patterns_are_refused_at_once(tmp_path, shape, pattern):
    """D6: libcst backtracks on nested `case` patterns (`case [[[...40...]]]:` in 150 bytes never
    finished) and CPython vouches for the file, so neither the guard nor a deadline stopped it."""
    source = SYNC + f"match x:\n    case {pattern}:\n        pass\n"
    ordinary = SYNC + "match x:\n    case [1, 2]:\n        pass\n" + "# padding\n" * (len(pattern) // 10)
    worst, normal = scan_of(tmp_path, "worst.py", source), scan_of(tmp_path, "normal.py", ordinary)
    kind, message = errors_of(worst())["worst.py"]
    assert kind == "parse" and "`case` patterns nested too deeply (line 4)" in message
    assert findings_of(normal(), "normal.py") == [(2, "LK204")]
    assert ratio(worst, normal) < 5


def test_many_case_clauses_add_up(tmp_path):
    clauses = "".join(f"    case {nested('[', ']', 12)}:\n        pass\n" for _ in range(40))
    result = run_scan(write(tmp_path, {"many.py": SYNC + "match x:\n" + clauses}))
    assert errors_of(result)["many.py"][0] == "parse"


def test_real_match_statements_are_still_checked(tmp_path):
    """The deepest pattern in the corpus costs 208 units (vllm's tests); the budget is 131,072."""
    source = ("import torch\nmatch cfg:\n    case {'device': ['cuda', {'index': (0 | 1)}], **rest}:\n"
              "        torch.cuda.synchronize()\n    case Point(x=[a, (b, c)]) if check('[[[['):\n        pass\n"
              "    case _:\n        pass\ncase = '[[[[[[[[[[[[[[[[[[[[[[[[[['\n")
    result = run_scan(write(tmp_path, {"real.py": source}))
    assert result.errors == [] and findings_of(result, "real.py") == [(4, "LK204")]


def test_an_and_chain_of_findings_takes_linear_time(tmp_path):
    """D7: 2,000 `torch.cuda.is_available()` joined by `and` took 105 s: every finding judged,
    printed and climbed the whole chain before it."""
    def chain(n: int) -> str:
        return "import torch\nx = (" + " and\n".join([CHECK] * n) + ")\n"

    def lines(n: int) -> str:
        return "import torch\n" + "".join(f"x = ({CHECK})\n" for _ in range(n))

    worst, normal = scan_of(tmp_path, "chain.py", chain(200)), scan_of(tmp_path, "lines.py", lines(200))
    assert len(findings_of(worst(), "chain.py")) == len(findings_of(normal(), "lines.py")) == 200
    assert ratio(worst, normal, repeat=2) < 3
    double = scan_of(tmp_path, "double.py", chain(400))
    assert ratio(double, worst, repeat=2) < 3  # twice the terms, not four times the time


def test_stacked_decorators_take_linear_time(tmp_path):
    """D19: 5,000 stacked decorators took 74 s: each finding in the stack asked every decorator."""
    def stacked(n: int) -> str:
        return "import torch\n" + "@torch.cuda.amp.autocast()\n" * n + "def f():\n    pass\n"

    def separate(n: int) -> str:
        return "import torch\n" + "@torch.cuda.amp.autocast()\ndef f():\n    pass\n" * n

    worst, normal = scan_of(tmp_path, "stack.py", stacked(500)), scan_of(tmp_path, "apart.py", separate(500))
    assert len(findings_of(worst(), "stack.py")) == len(findings_of(normal(), "apart.py")) == 500
    assert ratio(worst, normal, repeat=2) < 3
    double = scan_of(tmp_path, "double.py", stacked(1000))
    assert ratio(double, worst, repeat=2) < 3


def _toml_cases() -> dict[str, tuple[str, str]]:
    """(file name, hostile text) per place a scanned repository's TOML is parsed."""
    parts = ".".join(["a"] * 200_000)
    return {
        "header": ("pyproject.toml", f"[project]\nname = 'x'\n[{parts}]\nx = 1\n"),
        "key": ("conf/train.toml", f"device = 'cuda'\n{parts} = 1\n"),
        "quoted": ("conf/train.toml", "device = 'cuda'\n[" + ".".join(['"a"'] * 100_000) + "]\n"),
        "inline": ("configs/run.toml", "device = 'cuda'\nx = {" + " . ".join(["a"] * 100_000) + " = 1}\n"),
    }


@pytest.mark.parametrize("case", sorted(_toml_cases()))
def test_toml_keys_of_many_parts_are_refused_in_linear_time(tmp_path, case):
    """D8: tomllib builds every prefix of a dotted key: a 1 MB header of 500k parts, or a 400 kB
    dotted key in conf/train.toml, never finished."""
    name, hostile = _toml_cases()[case]
    ordinary = hostile.replace(".", "_")  # the same size: one long bare key
    worst, normal = scan_of(tmp_path, name, hostile, "worst"), scan_of(tmp_path, name, ordinary, "normal")
    kind, message = errors_of(worst())[name]
    assert kind == "parse" and "dotted parts" in message
    assert ratio(worst, normal) < 5


def test_a_configuration_with_a_long_dotted_key_is_one_line(tmp_path, capsys):
    from auditor.cli import main

    write(tmp_path, {"lockin-auditor.toml": ".".join(["a"] * 300_000) + " = 1\n", "a.py": SYNC})
    assert main([str(tmp_path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dotted parts" in err


def test_ordinary_dotted_keys_still_parse():
    from auditor import toml_guard

    text = "[tool.poetry.group.dev.dependencies]\n" + ".".join(["k"] * 63) + " = 1\nv = 'a.b.c.d.e'\n"
    assert toml_guard.loads(text)["tool"]["poetry"]["group"]["dev"]["dependencies"]["k"]
