"""No write outside the cache folder and the files asked for: never through a link the checkout
holds, never replacing a device, never rewriting a read-only file or changing its owner, and
never following a folder another process swaps for a link mid-run (issue 20: D4, D20, D22, D23,
D30). Every writer goes through auditor/sandbox/safe_files.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import main

ROOT = Path(__file__).resolve().parent.parent
SYNC = "import torch\ntorch.cuda.synchronize()\n"
FIXABLE = "import torch\nx = torch.cuda.memory_cached()\n"  # LK2xx, a safe fix to memory_reserved


@pytest.fixture
def audit(capsys, monkeypatch):
    """`audit ARGS` run in-process in `cwd`: (exit code, stdout, stderr) as a CompletedProcess."""
    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run


def audit_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})


@pytest.fixture
def checkout(tmp_path):
    """A checkout (the working directory, as in CI) and a precious file outside it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(SYNC)
    precious = tmp_path / "home" / ".bashrc"
    precious.parent.mkdir()
    precious.write_text("export PATH=/usr/bin\n")
    return repo, precious


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert errors == [proc.stderr.splitlines()[-1]] and errors[0].startswith("audit: error: cannot write")
    assert "internal" not in proc.stderr and "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@pytest.mark.parametrize("option", [["-o", "audit.sarif", "--format", "sarif"],
                                    ["--write-baseline", "audit.sarif"],
                                    ["--diff", "-o", "audit.sarif"]])
def test_a_committed_link_is_never_written_through(checkout, option, audit):
    """D4: the README's own CI command (`-o audit.sarif`) overwrote what the link named."""
    repo, precious = checkout
    (repo / "audit.sarif").symlink_to(precious)
    proc = audit(".", "--no-cache", *option, cwd=repo)
    one_line_error(proc, "symbolic link")
    assert precious.read_text() == "export PATH=/usr/bin\n"
    assert (repo / "audit.sarif").is_symlink()


def test_a_linked_folder_in_the_path_is_never_followed(checkout, tmp_path, audit):
    repo, precious = checkout
    (repo / "out").symlink_to(precious.parent, target_is_directory=True)
    (repo / "reports").mkdir()
    (repo / "reports" / "deep").symlink_to(precious.parent, target_is_directory=True)
    for target in ("out/.bashrc", "out/new.json", "reports/deep/new.json"):
        proc = audit(".", "--no-cache", "--format", "json", "-o", target, cwd=repo)
        one_line_error(proc, "symbolic link")
    assert sorted(os.listdir(precious.parent)) == [".bashrc"] and precious.read_text() == "export PATH=/usr/bin\n"


def test_the_users_own_links_and_devices_outside_the_checkout_still_work(checkout, tmp_path, audit):
    repo, _ = checkout
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "real.json").write_text("old")
    os.chmod(reports / "real.json", 0o640)
    (tmp_path / "latest.json").symlink_to(reports / "real.json")
    proc = audit(".", "--no-cache", "--format", "json", "-o", str(tmp_path / "latest.json"), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "latest.json").is_symlink()  # the link stays; its target is replaced
    assert json.loads((reports / "real.json").read_text())["findings"]
    assert stat.S_IMODE((reports / "real.json").stat().st_mode) == 0o640
    proc = audit_process(".", "--no-cache", "--format", "json", "-o", "/dev/stdout", cwd=repo)
    assert proc.returncode == 0 and json.loads(proc.stdout)["findings"]
    assert audit(".", "--no-cache", "-o", os.devnull, cwd=repo).returncode == 0
    assert os.path.exists(os.devnull) and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert not [p for p in os.listdir(reports) if "lockin" in p]  # no temporary file left


def test_regular_files_are_replaced_atomically_keeping_their_mode(checkout, audit):
    repo, _ = checkout
    (repo / "report.json").write_text("old report")
    os.chmod(repo / "report.json", 0o604)
    inode = (repo / "report.json").stat().st_ino
    assert audit(".", "--no-cache", "--format", "json", "-o", "report.json", cwd=repo).returncode == 0
    assert json.loads((repo / "report.json").read_text())["findings"]
    assert stat.S_IMODE((repo / "report.json").stat().st_mode) == 0o604
    assert (repo / "report.json").stat().st_ino != inode  # a new file renamed over, never half-written
    assert not [p for p in os.listdir(repo) if "lockin" in p]


def test_a_pipe_inside_the_checkout_is_refused_not_waited_on(checkout, audit):
    repo, _ = checkout
    os.mkfifo(repo / "audit.sarif")
    proc = audit(".", "--no-cache", "--format", "sarif", "-o", "audit.sarif", cwd=repo)
    one_line_error(proc, "not a regular file")


@pytest.fixture
def full_device(tmp_path):
    """A device like /dev/full. As root, a node of our own (outside the checkout): a regression
    would replace that one, never the machine's; otherwise /dev/full, which only root could replace."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        node = tmp_path / "full"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        return str(node)
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    return "/dev/full"


@pytest.mark.parametrize("option", ["--write-baseline", "-o"])
def test_a_device_is_written_in_place_never_replaced(checkout, option, audit, full_device):
    """D23: `--write-baseline /dev/full` as root replaced the device node with a regular file."""
    repo, _ = checkout
    proc = audit(".", "--no-cache", option, full_device, cwd=repo)
    one_line_error(proc, f"cannot write {full_device}", "No space left")
    assert stat.S_ISCHR(os.stat(full_device).st_mode)


@pytest.mark.parametrize(("target", "says"), [
    (".", "folder"), ("sub", "folder"), ("missing/baseline.json", "does not exist"), ("", "folder"),
    ("/proc/self/mem", "cannot write"),
])
def test_impossible_baseline_targets_are_one_line_errors(checkout, target, says, audit):
    """D22: `--write-baseline` to a folder, a missing folder, /proc/self/mem or '' was an internal error."""
    repo, _ = checkout
    (repo / "sub").mkdir()
    proc = audit(".", "--no-cache", "--write-baseline", target, cwd=repo)
    one_line_error(proc, says)


def test_fix_never_writes_through_a_folder_swapped_for_a_link(tmp_path, monkeypatch, capsys):
    """D20: --fix wrote outside the tree (2 runs in 350) while another process swapped a folder
    for a link between the checks and the write. The swap happens here right after the file is
    read: the write goes to the folder that was opened, never to where the link points."""
    from auditor.fix import apply

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text(FIXABLE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text(FIXABLE)
    original = apply._fix_data

    def swap_then_fix(*args, **kwargs):
        os.rename(repo / "pkg", tmp_path / "moved-away")
        (repo / "pkg").symlink_to(outside, target_is_directory=True)
        return original(*args, **kwargs)

    monkeypatch.setattr(apply, "_fix_data", swap_then_fix)
    monkeypatch.chdir(repo)
    main([".", "--no-cache", "--fix"])
    capsys.readouterr()
    assert (outside / "mod.py").read_text() == FIXABLE  # never touched
    assert "memory_reserved" in (tmp_path / "moved-away" / "mod.py").read_text()  # the file that was read


def test_add_noqa_never_writes_through_a_folder_swapped_for_a_link(tmp_path, monkeypatch, capsys):
    from auditor.gates import add_noqa

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text(SYNC)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text(SYNC)
    original = add_noqa._commented

    def swap_then_comment(*args, **kwargs):
        os.rename(repo / "pkg", tmp_path / "moved-away")
        (repo / "pkg").symlink_to(outside, target_is_directory=True)
        return original(*args, **kwargs)

    monkeypatch.setattr(add_noqa, "_commented", swap_then_comment)
    monkeypatch.chdir(repo)
    assert main([".", "--no-cache", "--add-noqa"]) == 0
    capsys.readouterr()
    assert (outside / "mod.py").read_text() == SYNC
    assert "noqa: LK204" in (tmp_path / "moved-away" / "mod.py").read_text()


def test_fix_leaves_read_only_files_alone(tmp_path, monkeypatch, capsys):
    """D30: --fix rewrote 0444 files (a rename needs only the folder writable)."""
    (tmp_path / "ro.py").write_text(FIXABLE)
    (tmp_path / "rw.py").write_text(FIXABLE)
    os.chmod(tmp_path / "ro.py", 0o444)
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--fix", "--format", "json"])
    err = capsys.readouterr().err
    assert (tmp_path / "ro.py").read_text() == FIXABLE and stat.S_IMODE((tmp_path / "ro.py").stat().st_mode) == 0o444
    assert "memory_reserved" in (tmp_path / "rw.py").read_text()
    assert "ro.py: not fixed: the file is read-only" in err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing an owner needs root")
def test_fix_keeps_the_owner_of_the_files_it_rewrites(tmp_path, monkeypatch, capsys):
    """D30: run as root, --fix left every fixed file owned by root."""
    path = tmp_path / "theirs.py"
    path.write_text(FIXABLE)
    os.chown(path, 4321, 4322)
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--fix"])
    capsys.readouterr()
    info = path.stat()
    assert "memory_reserved" in path.read_text() and (info.st_uid, info.st_gid) == (4321, 4322)


def test_add_noqa_keeps_read_only_files_and_links_alone(tmp_path, monkeypatch, capsys):
    (tmp_path / "ro.py").write_text(SYNC)
    os.chmod(tmp_path / "ro.py", 0o444)
    monkeypatch.chdir(tmp_path)
    assert main([".", "--no-cache", "--add-noqa"]) == 0
    assert "read-only" in capsys.readouterr().err
    assert (tmp_path / "ro.py").read_text() == SYNC


def test_one_containment_test_for_every_place_that_asks():
    """auditor.paths.inside: the walk, the git sandbox, the configuration reader and the fix run's
    created files ask it; a sibling that starts with the same letters is not inside."""
    from auditor.paths import inside

    assert inside("/repo", "/repo") and inside("/repo/a/b.py", "/repo") and inside("/repo/a", "/repo/")
    assert not inside("/repo-other/a.py", "/repo") and not inside("/re", "/repo") and not inside("/", "/repo")
    assert inside("/x", "/")
