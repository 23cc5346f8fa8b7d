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
    # four times the terms: linear is 4x the time, quadratic 16x; the margin absorbs a loaded machine
    quadruple = scan_of(tmp_path, "quadruple.py", chain(800))
    assert ratio(quadruple, worst, repeat=2) < 8


def test_stacked_decorators_take_linear_time(tmp_path):
    """D19: 5,000 stacked decorators took 74 s: each finding in the stack asked every decorator."""
    def stacked(n: int) -> str:
        return "import torch\n" + "@torch.cuda.amp.autocast()\n" * n + "def f():\n    pass\n"

    def separate(n: int) -> str:
        return "import torch\n" + "@torch.cuda.amp.autocast()\ndef f():\n    pass\n" * n

    worst, normal = scan_of(tmp_path, "stack.py", stacked(500)), scan_of(tmp_path, "apart.py", separate(500))
    assert len(findings_of(worst(), "stack.py")) == len(findings_of(normal(), "apart.py")) == 500
    assert ratio(worst, normal, repeat=2) < 3
    quadruple = scan_of(tmp_path, "quadruple.py", stacked(2000))  # linear 4x, quadratic 16x
    assert ratio(quadruple, worst, repeat=2) < 8


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
    from auditor.read import toml_guard

    text = "[tool.poetry.group.dev.dependencies]\n" + ".".join(["k"] * 63) + " = 1\nv = 'a.b.c.d.e'\n"
    assert toml_guard.loads(text)["tool"]["poetry"]["group"]["dev"]["dependencies"]["k"]


def test_dockerfile_exec_form_with_escaped_words_is_linear(tmp_path):
    """D9: `RUN ["\\u0061", ...]` with 80,000 words took 105 s: each word was searched for as
    json.dumps wrote it, which is not how the file wrote it, from that word to the end."""
    def exec_form(word: str, n: int) -> str:
        return "FROM ubuntu\nRUN [" + ", ".join([word] * n) + ', "nvidia-smi"]\nRUN ["nvidia-smi", "-L"]\n'

    # Same size, same findings: the escaped words cost what plain ones do. The old search was
    # quadratic only in escaped words, so at 80,000 it took 105 s against well under 2 s. (A
    # growth ratio, 80,000 escaped words against 20,000, measured 8.02 on a loaded CI machine
    # where linear is 4: too near its bound of 8 to tell anything.)
    worst = scan_of(tmp_path, "Dockerfile", exec_form('"\\u0061"', 80_000), "worst")
    normal = scan_of(tmp_path, "Dockerfile", exec_form('"aaaaaa"', 80_000), "normal")
    assert findings_of(worst(), "Dockerfile") == findings_of(normal(), "Dockerfile") == [(3, "LK603")]
    assert ratio(worst, normal) < 3


def test_requirements_build_pips_option_parser_once_per_file(tmp_path, monkeypatch):
    """D12: pip builds an option parser for every line (about 300 µs a line)."""
    import pip_requirements_parser as pip_req

    built = []
    original = pip_req.build_parser
    monkeypatch.setattr(pip_req, "build_parser", lambda: built.append(1) or original())
    text = "".join(f"pkg{i}==1.{i}\n" for i in range(300)) + "--extra-index-url https://download.pytorch.org/whl/cu121\n"
    result = run_scan(write(tmp_path, {"requirements.txt": text + "cupy-cuda12x\n"}))
    assert {rule for _, rule in findings_of(result, "requirements.txt")} == {"LK502", "LK504"}
    assert len(built) == 1


def test_requirements_and_config_packages_scale_linearly(tmp_path):
    """Each requirement went through every package row: linear in the rows now (D18 too)."""
    def requirements(n: int) -> str:
        return "".join(f"pkg{i}==1.0\n" for i in range(n)) + "cupy-cuda12x\n"

    single, quadruple = (scan_of(tmp_path, "requirements.txt", requirements(n), f"r{n}") for n in (3000, 12000))
    assert ratio(quadruple, single, repeat=2) < 8  # linear 4x, quadratic 16x


@pytest.mark.parametrize(("name", "text"), [
    ("requirements.txt", "torch==2.1.0+cu121\n" * 120_000),
    ("Dockerfile", "FROM ubuntu\nRUN echo a \\\n" + "  && echo nvidia-smi \\\n" * 100_000 + "  && true\n"),
    ("run.sh", "#!/bin/bash\n" + "nvidia-smi\n" * 200_000),
])
def test_line_files_over_2_mb_are_refused_at_once(tmp_path, name, text):
    """D12: a 10 MB requirements.txt did not finish in 15 minutes; an 8.6 MB Dockerfile
    continuation ran past 120 s. Real ones are under 100 kB: over 2 MB is `too-large`."""
    assert len(text) > 2 * 1024 * 1024
    worst = scan_of(tmp_path, name, text, "worst")
    normal = scan_of(tmp_path, "notes.md", text, "normal")  # read by nobody: the floor of a run
    kind, message = errors_of(worst())[name]
    assert kind == "too-large" and "limit for a" in message
    assert ratio(worst, normal) < 10


def test_tens_of_thousands_of_configured_entries_are_a_configuration_error(tmp_path, capsys):
    """D13: 40,000 `exclude` globs hung discovery; D18: 40,000 `gpu-only-packages` took 150 s."""
    from auditor.cli import main

    names = ", ".join(f'"n{i}"' for i in range(40_000))
    for key in ("exclude", "extend-exclude", "select"):
        write(tmp_path, {"lockin-auditor.toml": f"{key} = [{names}]\n", "a.py": SYNC})
        assert main([str(tmp_path), "--no-cache"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "40,000 entries" in err, err
    for key in ("gpu-only-packages", "gpu-only-modules", "portable-modules"):
        write(tmp_path, {"lockin-auditor.toml": f"[catalogue]\n{key} = [{names}]\n"})
        assert main([str(tmp_path), "--no-cache"]) == 2
        assert "40,000 entries" in capsys.readouterr().err
    globs = "\n".join(f'"g{i}/*.py" = ["LK1"]' for i in range(1001))
    write(tmp_path, {"lockin-auditor.toml": f"[per-file-ignores]\n{globs}\n"})
    assert main([str(tmp_path), "--no-cache"]) == 2
    assert "1,001 entries" in capsys.readouterr().err


def test_exclude_globs_are_matched_in_time_linear_in_their_number():
    """fnmatch keeps 32,768 compiled patterns: past that, every glob was compiled again per file."""
    from auditor.discover.ignore import Excludes

    def matcher(n: int):
        excludes = Excludes(tuple(f"*skip{i}*" for i in range(n)))
        return lambda: [excludes.match(f"file{k}.py", f"src/file{k}.py") for k in range(20)]

    assert ratio(matcher(40_000), matcher(20_000), repeat=2) < 5  # compiled again each time: hundreds


def test_a_thousand_configured_packages_cost_little(tmp_path, capsys):
    import json

    from auditor.cli import main

    names = ", ".join(f'"pkg{i}"' for i in range(1000))
    modules = ", ".join(f'"mod{i}"' for i in range(1000))
    files = {"requirements.txt": "pkg5\ncupy-cuda12x\n", "a.py": "import mod7\n" + SYNC}
    plain = write(tmp_path / "plain", files)
    configured = write(tmp_path / "configured", {
        **files, "lockin-auditor.toml": f"[catalogue]\ngpu-only-packages = [{names}]\ngpu-only-modules = [{modules}]\n"})

    def audit(folder):
        return lambda: main([str(folder), "--no-cache", "--format", "json"])

    audit(configured)()
    report = json.loads(capsys.readouterr().out)
    found = {(f["path"].rpartition("/")[2], f["line"]) for f in report["findings"]}
    assert found >= {("requirements.txt", 1), ("a.py", 1)}  # the configured package and module
    # the catalogue rebuilt with 2,000 more entries is a fixed cost of the run; 4 held on a quiet
    # machine and measured 4.04 on a loaded one: 6 still fails a cost per entry and file
    assert ratio(audit(configured), audit(plain)) < 6
    capsys.readouterr()


@pytest.mark.parametrize("opening", ["packages=[", "find_packages("])
def test_packaging_files_are_read_for_components_in_linear_time(tmp_path, opening):
    """The components' reading of setup.py (as text): an opening never closed, repeated, cost a
    scan of the rest of the file per occurrence before the spans were bounded."""
    worst = scan_of(tmp_path, "setup.py", "import torch\n" + f"# {opening}\n" * 40_000, "worst")
    normal = scan_of(tmp_path, "setup.py", "import torch\n" + f"# {'a' * len(opening)}\n" * 40_000, "normal")
    worst(), normal()
    assert ratio(worst, normal, repeat=2) < 5
