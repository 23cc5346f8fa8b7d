""".gitignore matching (auditor/discover/patterns.py): what git ignores, in bounded time whatever the
patterns (issue 20, D5: one line of ten `**` against a 40-level folder never finished)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_untrusted import ratio

from auditor.discover.ignore import SKIPPED_DIRS
from auditor.discover.patterns import Layer, parse
from auditor.discover.walk import discover

# Patterns of every shape git gives a meaning to: floating names, anchored paths, folders only,
# negations (also of a folder's content), classes and ranges, escapes, `**` leading, inner and
# trailing, stars inside a name, and real files' lines (vllm's .gitignore).
IGNORE_FILES = {
    "names": "*.gen.py\n__pycache__/\nbuild/\n!build/keep.py\ncache*\n",
    "anchored": "/top.py\nsrc/*/skip.py\ndocs/\n/deep/a/\nvendor/*\n!vendor/keep.py\n",
    "double": "**/gen/\nsrc/**/tmp.py\nlogs/**\n**/x/**/y.py\na/**/b/**/c.py\n",
    "classes": "f[0-3].py\ng[!ab].py\nh?.py\n[xy]/\n\\#hash.py\n\\!bang.py\nsp\\ .py\n",
    "stars": "*a*a*b.py\nmid*dle.py\n*.py[cod]\nq**r.py\n",
    "negated-dir": "out/*\n!out/sub/\nout/sub/*\n!out/sub/ok.py\n",
    "vllm": "/vllm/_version.py\nvllm/third_party/deep_gemm/\n*.so\nbuild/\n!requirements/build/\ncmake-build-*/\n"
            "lib/\n*.egg-info/\n/.deps/\n*.py[cod]\n*$py.class\n.triton\n",
}
FILES = [
    "top.py", "a.py", "b.gen.py", "keep.py", "cache1.py", "cached/x.py", "f1.py", "f7.py", "ga.py", "gc.py",
    "h1.py", "h12.py", "#hash.py", "!bang.py", "sp .py", "aab.py", "xaxab.py", "abab.py", "middle.py", "mid-a-dle.py",
    "qr.py", "qxxr.py", "build/a.py", "build/keep.py", "sub/build/b.py", "requirements/build/r.py",
    "src/top.py", "src/pkg/skip.py", "src/pkg/deep/skip.py", "src/a/b/tmp.py", "src/tmp.py", "docs/conf.py",
    "sub/docs/conf.py", "deep/a/x.py", "deep/b/a/x.py", "vendor/drop.py", "vendor/keep.py", "vendor/sub/z.py",
    "gen/g.py", "pkg/gen/g.py", "logs/l.py", "logs/deep/l.py", "x/y.py", "x/m/n/y.py", "p/x/q/y.py",
    "a/c.py", "a/b/c.py", "a/m/b/n/c.py", "a/b/b/c.py", "x/inside.py", "y/inside.py", "z/inside.py",
    "out/a.py", "out/sub/ok.py", "out/sub/no.py", "vllm/_version.py", "vllm/third_party/deep_gemm/k.py",
    "cmake-build-x/c.py", "lib/l.py", "pkg.egg-info/e.py", "mod.pyc.py", "m$py.class", ".triton/t.py",
]


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def walked(path: str) -> bool:
    """Not under a folder discovery never enters, whatever .gitignore says (build/, *.egg-info/)."""
    return not any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in path.split("/")[:-1])


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("name", sorted(IGNORE_FILES))
def test_the_same_files_as_git(tmp_path, name):
    """Every .py file discovery keeps is one `git ls-files --others --exclude-standard` lists."""
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text(IGNORE_FILES[name])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!b.gen.py\nlocal*.py\n")
    for path in [*FILES, "sub/b.gen.py", "sub/local1.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    listed = {line for line in git(tmp_path, "ls-files", "--others", "--exclude-standard").splitlines()
              if line.endswith(".py") and walked(line)}
    kept = {f.display for f in discover([str(tmp_path)], str(tmp_path)).files if f.display.endswith(".py")}
    assert kept == listed


def test_lines_that_mean_nothing():
    assert [parse(line) for line in ("", "   ", "# comment", "/", "!", "//")] == [None] * 6
    assert parse("\\#x").matches("#x", "#x", False) and parse("!x").include is False
    assert parse("trailing  ").matches("trailing", "trailing", False)


def _deep_tree(root: Path, ignore: str, depth: int = 40) -> Path:
    root.mkdir()
    (root / ".gitignore").write_text(ignore)
    deep = root.joinpath(*["a"] * depth)
    deep.mkdir(parents=True)
    for i in range(20):
        (deep / f"m{i}.py").write_text("")
    return root


def test_many_double_stars_against_a_deep_folder_take_linear_time(tmp_path):
    """D5: `**/a*/` ten times, then `b`, against a 40-level folder: no result after 300 s."""
    hostile = "**/a*/" * 10 + "b\n"
    ordinary = "".join(f"name{i}.py\n" for i in range(len(hostile) // 10))[:len(hostile)] + "\n"
    worst = _deep_tree(tmp_path / "worst", hostile)
    normal = _deep_tree(tmp_path / "normal", ordinary)
    assert len(discover([str(worst)], str(worst)).files) == 20

    def walk(root: Path):
        return lambda: discover([str(root)], str(root))

    assert ratio(walk(worst), walk(normal)) < 5
    deeper = _deep_tree(tmp_path / "deeper", hostile, depth=80)
    assert ratio(walk(deeper), walk(worst)) < 5  # twice the depth: not 2**k times the time


def test_stars_inside_a_name_take_linear_time():
    """`*a*a*a...b` backtracks as a plain regex; as atomic stars it is linear in the name."""
    hostile = Layer("/r/", ["*a" * 30 + "*b"])
    ordinary = Layer("/r/", ["x" * 61])
    name = "/r/" + "a" * 250 + "c"

    def check(layer: Layer):
        return lambda: [layer.decide(name, False) for _ in range(200)]

    assert hostile.decide(name, False) is None and hostile.decide("/r/" + "a" * 30 + "b", False) is True
    assert ratio(check(hostile), check(ordinary)) < 20


def test_a_gitignore_of_many_lines_is_bounded(tmp_path):
    lines = [f"**/dir{i}/**/file{i}.py" for i in range(20_000)]
    layer = Layer("/r/", lines)
    assert len(layer.patterns) == 10_000  # MAX_PATTERNS: the rest is not a .gitignore any more
    assert layer.decide("/r/x/dir5/y/file5.py", False) is True
    assert layer.decide("/r/x/dir15000/y/file15000.py", False) is None
