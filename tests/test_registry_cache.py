"""A warm run takes the target registry from its cache's meta (whose key covers rules/targets.toml)
instead of parsing the file again, and a run with a cache that already passed the catalogue check
does not check it again; what the report says is the same."""

from __future__ import annotations

import json

import auditor.checks.registry as registry
import auditor.targets as targets
from auditor.cli import main


def test_a_warm_run_reads_no_registry_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    args = [str(tmp_path), "--isolated", "--format", "json", "--cache-dir", str(tmp_path / ".cache")]
    assert main(args) == 0
    cold = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(targets, "_LOADED", [])  # a new process: nothing loaded yet

    def refuse():
        raise AssertionError("rules/targets.toml parsed on a warm run")

    monkeypatch.setattr(targets, "_read", refuse)
    assert main(args) == 0
    warm = json.loads(capsys.readouterr().out)
    assert warm["run"]["files_cached"] == 1
    assert {k: v for k, v in warm.items() if k != "run"} == {k: v for k, v in cold.items() if k != "run"}


def test_malformed_cached_data_is_ignored(monkeypatch):
    monkeypatch.setattr(targets, "_LOADED", [])
    targets.prime({"target": [{"name": "x"}]})  # no display, no overall: not a registry
    targets.prime(["not", "a", "table"])
    assert targets._LOADED == []
    assert "cpu" in targets.names()  # read from the file as usual


def test_a_cache_that_passed_the_catalogue_check_skips_it(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    args = [str(tmp_path), "--isolated", "--format", "json", "--cache-dir", str(tmp_path / ".cache")]
    for cached in (registry._checked,):
        cached.cache_clear()
    monkeypatch.setattr(registry, "_TRUSTED", [])
    assert main(args) == 0  # the first run checks, and its cache remembers it
    capsys.readouterr()
    (tmp_path / "a.py").write_text("import torch\ntorch.cuda.synchronize()\nx = 1\n", encoding="utf-8")
    registry._checked.cache_clear()  # a new process

    def refuse(catalogue, rules):
        raise AssertionError("checked again")

    monkeypatch.setattr(registry, "enforce", refuse)
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run"]["files_parsed"] == 1 and report["warnings"] == []
    registry._checked.cache_clear()
