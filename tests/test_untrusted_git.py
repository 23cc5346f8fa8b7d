"""`--diff-base` on a hostile checkout: git runs no program the repository (or a submodule, or the
system or global configuration) configures, and reads no other repository.

Each case plants a driver of one kind whose command leaves a marker file, makes git meet it (a
modified file the driver's attributes cover, a dirty submodule, ...) and checks that the marker
never appears while the changed line is still reported."""

from __future__ import annotations

import json
import os
import pty
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from auditor.cli import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

OLD = "import torch\nmodel = Net().cuda()\n\n\nx = y.cuda()\n"
NEW_LINE = "k = j.cuda()\n"  # appended: line 6, the one changed line


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "train.py").write_text(OLD, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    monkeypatch.chdir(root)
    return root


def command(marker: Path) -> str:
    """A shell command that leaves `marker` and passes its input through (a working filter)."""
    return f"sh -c 'touch {marker}; cat'"


def payload(marker: Path) -> str:
    """command(marker) as a git configuration value (quoted: `;` would start a comment)."""
    return f'"{command(marker)}"'


def append_config(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as config:
        config.write(text)


def run_diff_base(capsys, *extra: str) -> tuple[int, list[tuple[str, int]], str]:
    code = main([".", "--format", "json", "--no-cache", "--select", "LK102", "--diff-base", "main", *extra])
    out, err = capsys.readouterr()
    found = sorted((f["path"], f["line"]) for f in json.loads(out)["findings"]) if out else []
    return code, found, err


PLAIN_COMMANDS = (["diff", "HEAD"], ["-p", "diff", "HEAD"], ["status"], ["diff", "--stat", "HEAD"])


def live_drivers(markers: Path) -> set[str]:
    """What plain git (as a user runs it, with this process's environment) starts here: the
    planted drivers are live, so their absence below is the auditor's doing. One run has a
    terminal for stdout, or git would start no pager."""
    for args in PLAIN_COMMANDS:
        subprocess.run(["git", *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    leader, follower = pty.openpty()
    try:
        subprocess.run(["git", "diff", "HEAD"], stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                       timeout=60, env={**os.environ, "TERM": "dumb"})
    finally:
        os.close(follower)
        os.close(leader)
    ran = {p.name for p in markers.iterdir()}
    for marker in markers.iterdir():
        marker.unlink()
    return ran


def assert_nothing_ran(markers: Path, capsys, live: set[str] | None = None) -> None:
    (Path("train.py")).write_text(OLD + NEW_LINE, encoding="utf-8")
    os.utime("train.py", (1, 1))  # stat-dirty: git must read the file (through any filter) to compare it
    ran = live_drivers(markers)
    assert live is None or live <= ran, f"the planted drivers {sorted(live - ran)} are not live"
    os.utime("train.py", (1, 1))
    code, found, err = run_diff_base(capsys)
    assert sorted(p.name for p in markers.iterdir()) == [], "git ran a program the repository configures"
    assert code == 0, err
    assert found == [("train.py", 6)]


@pytest.fixture
def markers(tmp_path):
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("driver", ["a=b", "evil", "x.y=z", "a=b.clean="])
@pytest.mark.parametrize("key", ["clean", "smudge", "process"])
def test_filters_of_any_name_never_run(repo, markers, capsys, driver, key):
    """D2: a driver named `a=b` defeated `-c filter.a=b.clean=` (git split it at the first `=`).
    git diff never smudges; that variant shows a smudge-only driver is no way in either."""
    append_config(repo / ".git" / "config", f'[filter "{driver}"]\n\t{key} = {payload(markers / key)}\n'
                                             f"\trequired = true\n")
    (repo / ".gitattributes").write_text(f"*.py filter={driver}\n")
    assert_nothing_ran(markers, capsys, live=set() if key == "smudge" else {key})


def test_attributes_from_the_repository_info_folder_and_config_name_nothing(repo, markers, capsys):
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    outside = repo.parent / "attrs"
    outside.write_text("* filter=evil\n")
    append_config(repo / ".git" / "config", f'[core]\n\tattributesFile = {outside}\n'
                                             f'[filter "evil"]\n\tclean = {payload(markers / "clean")}\n'
                                             f'[diff "evil"]\n\ttextconv = {payload(markers / "textconv")}\n')
    assert_nothing_ran(markers, capsys, live={"clean", "textconv"})


@pytest.mark.parametrize(("config", "attributes", "marker"), [
    ('[diff "evil"]\n\ttextconv = {}\n\tcachetextconv = true\n', "*.py diff=evil\n", "textconv"),
    ('[diff "evil"]\n\tcommand = {}\n', "*.py diff=evil\n", "command"),
    ("[diff]\n\texternal = {}\n", "", "external"),
    ("[core]\n\tfsmonitor = {}\n", "", "fsmonitor"),
    ("[core]\n\tpager = {}\n", "", "pager"),
    ("[pager]\n\tdiff = {}\n", "", "pager"),
])
def test_diff_drivers_external_diff_fsmonitor_and_pagers_never_run(repo, markers, capsys, config, attributes, marker):
    append_config(repo / ".git" / "config", config.format(payload(markers / marker)))
    (repo / ".gitattributes").write_text(attributes)
    assert_nothing_ran(markers, capsys, live={marker})


def test_hooks_aliases_includes_and_lazy_fetch_never_run(repo, markers, capsys, tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc"):
        for folder in (hooks, repo / ".git" / "hooks"):
            script = folder / name
            script.write_text(f"#!/bin/sh\ntouch {markers / ('hook-' + name)}\n")
            script.chmod(script.stat().st_mode | stat.S_IXUSR)
    included = tmp_path / "included.gitconfig"  # outside the checkout: never even read
    included.write_text(f'[filter "evil"]\n\tclean = {payload(markers / "included")}\n')
    append_config(repo / ".git" / "config",
                  f"[core]\n\thooksPath = {hooks}\n\tsshCommand = touch {markers / 'ssh'}\n"
                  f"[include]\n\tpath = {included}\n"
                  f"[alias]\n\tdiff = !touch {markers / 'alias-diff'}\n\trev-parse = !touch {markers / 'alias-rp'}\n"
                  f"\tmerge-base = !touch {markers / 'alias-mb'}\n\tls-files = !touch {markers / 'alias-ls'}\n"
                  f"[remote \"origin\"]\n\turl = ssh://example.invalid/x\n\tpromisor = true\n"
                  f"[extensions]\n\tpartialClone = origin\n[gc]\n\tauto = 1\n")
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    assert_nothing_ran(markers, capsys, live={"hook-post-index-change", "included"})


def test_a_missing_object_is_an_error_not_a_lazy_fetch(repo, markers, capsys):
    """A partial clone fetches a missing blob on demand, through core.sshCommand: the stand-in has
    no remote, so a missing object is a plain error (exit 2, one line)."""
    append_config(repo / ".git" / "config", f"[core]\n\trepositoryformatversion = 1\n\tsshCommand = touch {markers / 'ssh'}\n"
                                             f"[remote \"origin\"]\n\turl = ssh://example.invalid/x\n\tpromisor = true\n"
                                             f"[extensions]\n\tpartialClone = origin\n")
    blob = git(repo, "rev-parse", "HEAD:train.py").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    Path("train.py").write_text(OLD + NEW_LINE, encoding="utf-8")
    assert "ssh" in live_drivers(markers)
    code, _, err = run_diff_base(capsys)
    assert list(markers.iterdir()) == []
    assert code == 2 and err.count("\n") == 1 and "--diff-base" in err


def test_system_and_global_configuration_are_off(repo, markers, capsys, tmp_path, monkeypatch):
    """A runner's global git-lfs (or any) filter would run on every file of a pull request."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    for config in (home / ".gitconfig", home / ".config" / "git" / "config", tmp_path / "system.gitconfig"):
        config.write_text(f'[filter "lfs"]\n\tclean = {payload(markers / config.name)}\n\trequired = true\n'
                          f'[diff]\n\texternal = {payload(markers / ("ext-" + config.name))}\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "system.gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", command(markers / "env-external"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", command(markers / "env-fsmonitor"))
    (repo / ".gitattributes").write_text("*.py filter=lfs\n")
    assert_nothing_ran(markers, capsys, live={".gitconfig", "env-fsmonitor"})


def test_a_dirty_submodule_with_its_own_filter_runs_nothing(repo, markers, capsys, tmp_path):
    """D3: `git diff` ran `git status` inside a dirty submodule, whose own configuration
    (.git/modules/sub/config) the overrides never listed."""
    sub_origin = tmp_path / "sub-origin"
    sub_origin.mkdir()
    git(sub_origin, "init", "-q", "-b", "main")
    (sub_origin / "lib.py").write_text("import torch\nq = r.cuda()\n")
    (sub_origin / ".gitattributes").write_text("* filter=evil\n")
    git(sub_origin, "add", ".")
    git(sub_origin, "commit", "-qm", "sub")
    git(repo, "submodule", "add", "-q", str(sub_origin), "sub")
    git(repo, "commit", "-qm", "add sub")
    append_config(repo / ".git" / "modules" / "sub" / "config",
                  f'[filter "evil"]\n\tclean = {payload(markers / "sub-clean")}\n\tprocess = {payload(markers / "sub-process")}\n'
                  f'[core]\n\tfsmonitor = {payload(markers / "sub-fsmonitor")}\n')
    (repo / "sub" / "lib.py").write_text("import torch\nq = r.cuda()\nz = w.cuda()\n")  # dirty
    os.utime(repo / "sub" / "lib.py", (1, 1))
    assert_nothing_ran(markers, capsys, live={"sub-fsmonitor", "sub-process"})


@pytest.mark.parametrize("target", ["outside", "other-repo"])
def test_a_git_file_pointing_outside_the_tree_is_refused(repo, tmp_path, capsys, target):
    """D24: `.git` holding `gitdir: /other/repo` made git read another repository."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "secret.py").write_text("token = 'hunter2'\n")
    git(other, "add", ".")
    git(other, "commit", "-qm", "secret")
    shutil.rmtree(repo / ".git")
    (repo / ".git").write_text(f"gitdir: {other / '.git' if target == 'other-repo' else '../other/.git'}\n")
    code, _, err = run_diff_base(capsys)
    assert code == 2 and err.count("\n") == 1
    assert "points to a repository outside" in err and "hunter2" not in err


def test_links_and_borrowed_objects_outside_the_tree_are_refused(repo, tmp_path, capsys):
    outside = tmp_path / "elsewhere"
    shutil.move(repo / ".git", outside)
    (repo / ".git").symlink_to(outside, target_is_directory=True)
    code, _, err = run_diff_base(capsys)
    assert code == 2 and "symbolic link" in err
    (repo / ".git").unlink()
    shutil.move(outside, repo / ".git")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{tmp_path}/other/.git/objects\n")
    code, _, err = run_diff_base(capsys)
    assert code == 2 and "borrows objects from outside" in err


def test_a_git_file_inside_the_tree_is_followed(repo, capsys):
    shutil.move(repo / ".git", repo / ".real-git")
    (repo / ".git").write_text("gitdir: .real-git\n")
    (repo / ".gitignore").write_text(".real-git/\n")
    Path("train.py").write_text(OLD + NEW_LINE, encoding="utf-8")
    code, found, err = run_diff_base(capsys)
    assert code == 0, err
    assert found == [("train.py", 6)]


def test_git_never_writes_into_the_checkout(repo, capsys):
    """No index refresh, no lock, no object: .git is byte for byte what it was."""
    Path("train.py").write_text(OLD + NEW_LINE, encoding="utf-8")
    os.utime("train.py", (1, 1))
    (repo / "new.py").write_text("import torch\nm.cuda()\n")

    def snapshot() -> dict[str, tuple[int, int, bytes]]:
        return {str(p): (p.stat().st_mtime_ns, p.stat().st_size, p.read_bytes()) for p in (repo / ".git").rglob("*")
                if p.is_file()}

    before = snapshot()
    code, found, err = run_diff_base(capsys)
    assert code == 0, err and found == [("new.py", 2), ("train.py", 6)]
    assert snapshot() == before
