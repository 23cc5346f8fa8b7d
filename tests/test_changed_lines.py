"""--diff-base on a real temporary git repository: only findings on lines added or changed since
the ref count (committed, staged, unstaged and untracked changes alike), and a hostile
repository configuration cannot make git run anything."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from auditor.cli import main
from auditor.gates.changed_lines import parse_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

OLD = "import torch\nmodel = Net().cuda()\n\n\nx = y.cuda()\n"


def git(repo, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "train.py").write_text(OLD, encoding="utf-8")
    (root / "util.py").write_text("import torch\nz = w.cuda()\n", encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    monkeypatch.chdir(root)
    return root


def changed(capsys, *args: str) -> tuple[int, list[tuple[str, int]], dict]:
    code = main([".", "--format", "json", "--no-cache", "--select", "LK102", "--diff-base", "main", *args])
    report = json.loads(capsys.readouterr().out)
    return code, sorted((f["path"], f["line"]) for f in report["findings"]), report


def test_only_changed_lines_count(repo, capsys):
    assert changed(capsys)[1] == []
    (repo / "train.py").write_text(OLD.replace("\n\n\n", "\nm2 = M().cuda()  # new\n\n"), encoding="utf-8")  # unstaged
    (repo / "staged.py").write_text("import torch\na = b.cuda()\n", encoding="utf-8")
    git(repo, "add", "staged.py")
    (repo / "untracked.py").write_text("import torch\nc = d.cuda()\n", encoding="utf-8")
    git(repo, "checkout", "-qb", "feature")
    (repo / "util.py").write_text("import torch\nz = w.cuda()\nq = r.cuda()\n", encoding="utf-8")
    git(repo, "commit", "-qam", "feature work")  # committed on the branch (this also commits train.py)
    code, found, report = changed(capsys, "--fail-on", "major")
    assert found == [("staged.py", 2), ("train.py", 3), ("untracked.py", 2), ("util.py", 3)]
    assert code == 1 and report["changed_lines"]["base"] == "main" and report["changed_lines"]["hidden"] == 3
    assert report["scores"]["cpu"] < 100


def test_renamed_file_keeps_its_old_lines_old(repo, capsys):
    git(repo, "mv", "train.py", "trainer.py")
    with open(repo / "trainer.py", "a", encoding="utf-8") as handle:
        handle.write("n = o.cuda()\n")
    assert changed(capsys)[1] == [("trainer.py", 6)]


def test_bad_refs_exit_2(repo, capsys):
    for ref in ("no-such-branch", "--output=/tmp/x"):
        code = main([".", "--no-cache", "--diff-base", ref])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "--diff-base" in err


def test_outside_a_repository_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert main([".", "--no-cache", "--diff-base", "main"]) == 2
    assert "--diff-base" in capsys.readouterr().err


def test_hostile_repository_config_runs_nothing(repo, capsys, tmp_path):
    marker = tmp_path / "pwned"
    command = f"sh -c 'touch {marker}; cat'"
    with open(repo / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f'[core]\n\tfsmonitor = "{command}"\n\tpager = {command}\n\thooksPath = {tmp_path}\n'
                     f'[diff]\n\texternal = {command}\n[filter "evil"]\n\tclean = {command}\n\tsmudge = {command}\n'
                     f'\trequired = true\n[diff "evil"]\n\ttextconv = {command}\n\tcommand = {command}\n')
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n", encoding="utf-8")
    (repo / "train.py").write_text(OLD + "k = j.cuda()\n", encoding="utf-8")
    code, found, _ = changed(capsys)
    assert not marker.exists(), "git ran a command from the repository's configuration"
    assert code == 0 and ("train.py", 6) in found


def test_parse_diff_handles_quoted_names_new_and_deleted_files(tmp_path):
    text = ('diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,0 +2,2 @@\n+a\n+b\n@@ -9 +11 @@\n-c\n+d\n'
            'diff --git "a/t\\tab.py" "b/t\\tab.py"\n--- /dev/null\n+++ "b/t\\tab.py"\n@@ -0,0 +1 @@\n+e\n'
            'diff --git a/gone b/gone\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-f\n'
            'Binary files a/img.py and b/img.py differ\n')
    files: dict = {}
    parse_diff(text, str(tmp_path), files)
    assert files == {str(tmp_path / "x"): {2, 3, 11}, str(tmp_path / "t\tab.py"): {1}, str(tmp_path / "img.py"): None}


def moved_on(repo) -> None:
    """A branch from `main`, then `main` moves on: it rewrites line 2 and adds a file, both
    with lock-in the branch never touched; the branch adds one line of its own."""
    git(repo, "checkout", "-qb", "feature")
    with open(repo / "train.py", "a", encoding="utf-8") as handle:
        handle.write("f = g.cuda()  # the branch's line\n")  # line 6
    git(repo, "commit", "-qam", "feature")
    git(repo, "checkout", "-q", "main")
    (repo / "train.py").write_text(OLD.replace("Net().cuda()", "Net().to(dev)"), encoding="utf-8")
    (repo / "later.py").write_text("import torch\nlate = x.cuda()\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "main moves on")
    git(repo, "checkout", "-q", "feature")


@pytest.mark.parametrize("base", ["main", "main...HEAD", "main..."])
def test_the_base_is_where_the_branch_left_it_not_its_tip(repo, capsys, base):
    """Issue 18, item 1: against main's tip, line 2 (which main rewrote since) read as changed
    by the branch. As `git diff main...HEAD`, only the branch's own line counts."""
    moved_on(repo)
    expected = subprocess.run(["git", "diff", "-U0", f"{base.partition('...')[0]}...HEAD"], cwd=repo,
                              capture_output=True, text=True, check=True).stdout
    assert "+f = g.cuda()" in expected and "Net()" not in expected  # what git itself calls the branch's change
    code = main([".", "--format", "json", "--no-cache", "--select", "LK102", "--diff-base", base])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert sorted((f["path"], f["line"]) for f in report["findings"]) == [("train.py", 6)]
    assert report["changed_lines"]["base"] == base


def test_the_merge_base_with_uncommitted_work_on_top(repo, capsys):
    moved_on(repo)
    (repo / "wip.py").write_text("import torch\nw = v.cuda()\n", encoding="utf-8")
    with open(repo / "util.py", "a", encoding="utf-8") as handle:
        handle.write("u = t.cuda()\n")  # line 3, unstaged
    assert changed(capsys)[1] == [("train.py", 6), ("util.py", 3), ("wip.py", 2)]


@pytest.mark.parametrize(("base", "says"), [
    ("main..HEAD", "two-dot"), ("main...feature", "must be HEAD"), ("...HEAD", "give a branch"),
])
def test_ranges_other_than_ref_dot_dot_dot_head_are_usage_errors(repo, capsys, base, says):
    git(repo, "branch", "feature")
    assert main([".", "--no-cache", "--diff-base", base]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_unrelated_history_or_a_shallow_clone_says_to_fetch_it(repo, capsys):
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "commit", "-qm", "unrelated")
    assert main([".", "--no-cache", "--diff-base", "main"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no common ancestor" in err and "fetch-depth: 0" in err


def test_a_shallow_clone_reads_and_says_what_to_fetch(repo, capsys, tmp_path, monkeypatch):
    """actions/checkout fetches one commit by default: the merge-base is not there."""
    moved_on(repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{repo}", str(clone))
    monkeypatch.chdir(clone)
    assert (clone / ".git" / "shallow").exists()
    assert main([".", "--no-cache", "--diff-base", "origin/main"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no common ancestor" in err and "fetch-depth: 0" in err
    git(clone, "fetch", "-q", "--unshallow")
    code = main([".", "--format", "json", "--no-cache", "--select", "LK102", "--diff-base", "origin/main"])
    assert code == 0
    assert [(f["path"], f["line"]) for f in json.loads(capsys.readouterr().out)["findings"]] == [("train.py", 6)]
