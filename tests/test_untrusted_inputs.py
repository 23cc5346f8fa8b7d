"""Hostile values in what a run reads besides the scanned files: baselines, versions and the
configuration. Each is one line on stderr and exit 2 (or a valid report), never a hang, a flood,
an internal error or invalid JSON (issue 20: D10, D22, D25)."""

from __future__ import annotations

import json
import os
import threading

import pytest

from auditor.cli import main

SYNC = "import torch\ntorch.cuda.synchronize()\n"
HUGE = "9" * 5000


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(SYNC)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def one_line(capsys, *words: str) -> None:
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("audit: error: ") and "internal" not in err, err
    for word in words:
        assert word in err, err


def run_within(seconds: float, function) -> object:
    """`function()`, failing (not hanging the suite) when it takes longer than `seconds`."""
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(function()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still running after {seconds} s"
    return outcome[0]


@pytest.mark.parametrize("where", ["option", "config", "config-link"])
def test_a_baseline_that_is_a_pipe_is_an_error_not_a_hang(repo, capsys, where):
    """D10: a configured baseline that is a FIFO (or a link to one in the repo) blocked forever."""
    os.mkfifo(repo / "baseline.json")
    if where == "config-link":
        (repo / "link.json").symlink_to(repo / "baseline.json")
    name = "link.json" if where == "config-link" else "baseline.json"
    if where == "option":
        args = [".", "--no-cache", "--baseline", name]
    else:
        (repo / "lockin-auditor.toml").write_text(f'baseline = "{name}"\n')
        args = [".", "--no-cache"]
    assert run_within(60, lambda: main(args)) == 2
    one_line(capsys, "named pipe")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_baseline_that_is_a_device_is_an_error_not_a_flood(repo, capsys, device):
    """D22: `--baseline /dev/zero` read until MemoryError."""
    if not os.path.exists(device):
        pytest.skip(f"needs {device}")
    assert run_within(60, lambda: main([".", "--no-cache", "--baseline", device])) == 2
    one_line(capsys, "character device")


def _baseline_with(repo, capsys, **scores) -> str:
    assert main([".", "--no-cache", "--write-baseline", "base.json"]) == 0
    capsys.readouterr()
    document = json.loads((repo / "base.json").read_text())
    document["scores"].update(scores)
    return json.dumps(document)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "9" * 401, HUGE, "1e999", '"80"', "true",
                                   "-1", "100.5"])
def test_baseline_scores_must_be_finite_numbers_from_0_to_100(repo, capsys, value):
    """D22: a 401-digit score was an internal OverflowError; D25: nan/inf came out of --format
    json as NaN/Infinity, which is not JSON."""
    text = _baseline_with(repo, capsys).replace('"overall": ', f'"overall": {value}, "was": ', 1)
    (repo / "base.json").write_text(text)
    assert main([".", "--no-cache", "--baseline", "base.json", "--format", "json"]) == 2
    one_line(capsys, "baseline", "malformed" if value not in ("NaN", "Infinity", "-Infinity", HUGE) else "")


def test_a_well_formed_baseline_still_gives_valid_json(repo, capsys):
    (repo / "base.json").write_text(_baseline_with(repo, capsys, overall=12.5))
    assert main([".", "--no-cache", "--baseline", "base.json", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in the report"))
    assert report["baseline"]["scores"]["overall"] == 12.5


@pytest.mark.parametrize("version", [f"2.{HUGE}", HUGE, f"{'1' * 10}.0", "2." + "1" * 4301])
def test_absurd_torch_versions_are_usage_errors(repo, capsys, version):
    """D22: a 5,000-digit --torch-version was an internal error (int() refuses 4,300 digits)."""
    assert main([".", "--no-cache", "--torch-version", version]) == 2
    one_line(capsys, "--torch-version")
    (repo / "lockin-auditor.toml").write_text(f'torch-version = "{version}"\n')
    assert main([".", "--no-cache"]) == 2
    one_line(capsys, "torch-version")


def test_absurd_versions_in_dependency_files_do_not_break_the_floor(repo, capsys):
    (repo / "requirements.txt").write_text(f"torch>=2.{HUGE}\n")
    (repo / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = ["torch>={HUGE}"]\n')
    assert main([".", "--no-cache", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"]


def test_a_discovered_pyproject_linked_out_of_the_repository_is_not_read(tmp_path, monkeypatch, capsys):
    """D24: config discovery opened a pyproject.toml symlink pointing outside the repository."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[tool.lockin-auditor]\nselect = ["LK204"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a.py").write_text("import torch\nm.cuda()\n" + SYNC)
    (repo / "pyproject.toml").symlink_to(outside / "pyproject.toml")
    monkeypatch.chdir(repo)
    assert main([".", "--no-cache", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {f["rule"] for f in report["findings"]} >= {"LK102", "LK204"}  # the outside selection never applied
    (repo / "pyproject.toml").unlink()
    (repo / "lockin-auditor.toml").symlink_to(outside / "pyproject.toml")
    assert main([".", "--no-cache"]) == 2
    one_line(capsys, "link out of the repository")


@pytest.mark.parametrize("name", ["lockin-auditor.toml", "pyproject.toml"])
def test_a_configuration_that_is_a_pipe_or_device_never_blocks(tmp_path, monkeypatch, capsys, name):
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(SYNC)
    (tmp_path / name).symlink_to("/dev/zero")
    monkeypatch.chdir(tmp_path)
    assert run_within(60, lambda: main([".", "--no-cache", "--config", name])) == 2
    one_line(capsys, "--config")


def _chain(root, depth: int) -> None:
    (root / "requirements.txt").write_text("torch\n-r chain/r1.lst\n")
    (root / "chain").mkdir()
    for level in range(1, depth):
        (root / "chain" / f"r{level}.lst").write_text(f"pkg{level}\n-r r{level + 1}.lst\n")
    (root / "chain" / f"r{depth}.lst").write_text("cupy-cuda12x\n")


def test_a_long_include_chain_is_one_error_not_a_recursion_error(tmp_path):
    """D27: a `-r` chain deeper than about 320 files stopped with "maximum recursion depth exceeded"."""
    from test_untrusted import errors_of, run_scan

    _chain(tmp_path, 400)
    result = run_scan(tmp_path, select=["LK5"])
    kind, message = errors_of(result)["chain/r99.lst"]
    assert kind == "include" and "include chain deeper than 100 files" in message
    assert "internal" not in {e.kind for e in result.errors} and not result.findings


def test_an_include_chain_of_ordinary_depth_is_read_to_its_end(tmp_path):
    from test_untrusted import run_scan

    _chain(tmp_path, 60)
    result = run_scan(tmp_path, select=["LK5"])
    assert result.errors == [] and [(f.path, f.rule) for f in result.findings] == [("chain/r60.lst", "LK504")]


def test_temporary_files_of_killed_saves_are_pruned(tmp_path, monkeypatch):
    """D26: a SIGKILL during a cache save left a 20 MB `.tmp-*.bin` that was never pruned."""
    from test_untrusted import run_scan

    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(SYNC)
    run_scan(tmp_path, cache=True)
    folder = tmp_path / ".lockin_auditor_cache"
    old, fresh, other = folder / ".tmp-0123456789abcdef.bin", folder / ".tmp-fedcba9876543210.bin", folder / ".tmp-x.bin"
    for path in (old, fresh, other):
        path.write_bytes(b"\0" * (20 * 1024 * 1024 if path is old else 10))
    os.utime(old, (1, 1))
    os.utime(other, (1, 1))
    link = folder / ".tmp-aaaaaaaaaaaaaaaa.bin"
    link.symlink_to(tmp_path / "a.py")
    (tmp_path / "a.py").write_text(SYNC + "x = 1\n")  # a change: the next run saves, and prunes
    run_scan(tmp_path, cache=True)
    assert not old.exists()
    assert fresh.exists() and other.exists() and link.is_symlink()  # a save in progress; not ours; a link
