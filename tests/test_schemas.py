"""The configuration's JSON Schema (auditor/schemas/config.schema.json, draft 2020-12): the shipped
file is the one generated from the key table, and the schema and the loader agree on what a
configuration may hold (the README's example and the demo repository's pass; a typo, a wrong type,
a threshold out of range and an unknown format fail both)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest

from auditor.config import ConfigError
from auditor.config.keys import CATALOGUE_KEYS, KEYS
from auditor.config.load import settings_from_table
from auditor.schemas import CONFIG_FILE, config_schema, render, shipped

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def schema() -> dict:
    loaded = json.loads(shipped(CONFIG_FILE))
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def _valid(schema: dict, table: dict) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(table)


def test_the_shipped_schema_is_the_generated_one():
    assert shipped(CONFIG_FILE) == render(config_schema()), "run `python -m auditor.schemas` and commit the file"


def test_every_file_key_is_in_the_schema_and_nothing_else(schema):
    assert set(schema["properties"]) == {k.name for k in KEYS if k.file is not None}
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]["catalogue"]["properties"]) == set(CATALOGUE_KEYS)
    assert all(schema["properties"][k.name]["description"] == k.help for k in KEYS if k.file is not None)


def _readme_table() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "[tool.lockin-auditor]" in b)
    return tomllib.loads(block)["tool"]["lockin-auditor"]


def test_the_readme_example_and_the_demo_repository_validate(schema, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    readme = _readme_table()
    assert len(readme) >= 15 and _valid(schema, readme), list(jsonschema.Draft202012Validator(schema).iter_errors(readme))
    settings_from_table(readme, str(tmp_path / "pyproject.toml"))  # the loader takes it too
    demo = tomllib.loads((ROOT / "fixtures" / "demo-repo" / "pyproject.toml").read_text(encoding="utf-8"))
    table = demo.get("tool", {}).get("lockin-auditor", {})
    assert _valid(schema, table)


@pytest.mark.parametrize("table", [
    {"selct": ["LK1"]},                                  # a typo
    {"force-exclude": "yes"},                            # not a boolean
    {"fail-under": 101},                                 # out of range
    {"fail-under": {"tpu": -1}},
    {"output-format": "sarf"},                           # no such format
    {"select": [1, 2]},                                  # not strings
    {"catalogue": {"gpu-only-package": ["x"]}},          # a typo inside the catalogue table
    {"per-file-ignores": {"tests/**": 3}},
])
def test_what_the_loader_rejects_the_schema_rejects(schema, table, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not _valid(schema, table)
    with pytest.raises(ConfigError):
        settings_from_table(table, str(tmp_path / "lockin-auditor.toml"))


@pytest.mark.parametrize("table", [
    {"select": "LK1"}, {"fail-under": 80}, {"fail-under": {"overall": 70, "tpu": 85}}, {"output-format": "rdjson"},
    {"exclude": ["a/"], "extend-exclude": "b.py"}, {"severity": {"LK216": "major"}},
])
def test_what_the_loader_takes_the_schema_takes(schema, table, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings_from_table(table, str(tmp_path / "lockin-auditor.toml"))
    assert _valid(schema, table)



# -- the JSON report ---------------------------------------------------------------------------------
REPORT = "report.schema.json"


@pytest.fixture(scope="module")
def report_schema() -> dict:
    loaded = json.loads(shipped(REPORT))
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def _errors(schema: dict, report: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft202012Validator(schema).iter_errors(report)]


def _report(capsys, *args: str, expect: tuple[int, ...] = (0, 1)) -> dict:
    from auditor.cli import main

    code = main([*args, "--format", "json", "--no-cache", "--isolated"])
    out, _ = capsys.readouterr()
    assert code in expect, out[-2000:]
    return json.loads(out)


def test_the_report_schema_names_the_format_version_of_this_branch(report_schema):
    from auditor.report.json_report import FORMAT_VERSION

    assert report_schema["properties"]["format_version"] == {"const": FORMAT_VERSION}


def test_the_demo_repository_report_validates(report_schema, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    report = _report(capsys, "fixtures/demo-repo", "--show-suppressed")
    assert len(report["findings"]) > 20 and any(f["fix"] for f in report["findings"])
    assert _errors(report_schema, report) == []
    narrowed = _report(capsys, "fixtures/demo-repo", "--target", "tpu")
    assert narrowed["focus"] == ["tpu"] and _errors(report_schema, narrowed) == []


def test_a_report_with_a_baseline_a_notebook_and_an_error_validates(report_schema, capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("import torch\nx = y.cuda()  # lockin: ignore[LK102]\nz = w.cuda()\n",
                                       encoding="utf-8")
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    x.cuda()\n", encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                              "source": ["import torch\n", "torch.cuda.synchronize()\n"]}],
                                                   "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _report(capsys, ".", "--write-baseline", "base.json")
    (tmp_path / "new.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    report = _report(capsys, ".", "--baseline", "base.json", "--show-suppressed", "--fail-on", "major")
    assert report["baseline"]["known_errors"] == 1 and report["suppressed"] and report["findings"]
    assert report["gate"]["passed"] is False
    assert _errors(report_schema, report) == []
    whole = _report(capsys, ".")
    assert any(f["cell"] == 1 for f in whole["findings"]) and whole["errors"]
    assert _errors(report_schema, whole) == []


def test_the_report_schema_rejects_a_changed_shape(report_schema, capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("import torch\nz = w.cuda()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = _report(capsys, ".")
    assert _errors(report_schema, report) == []
    for change in ({"extra": 1}, {"format_version": 5}):
        assert _errors(report_schema, {**report, **change})
    missing = {k: v for k, v in report.items() if k != "verdicts"}
    assert _errors(report_schema, missing)
    finding = {**report["findings"][0], "line": 0}
    assert _errors(report_schema, {**report, "findings": [finding]})
    renamed = {**report["findings"][0], "lineno": 2}
    assert _errors(report_schema, {**report, "findings": [renamed]})


def test_a_fix_report_with_a_created_module_validates(report_schema, capsys, tmp_path):
    (tmp_path / "train.py").write_text("import torch\nm = M().cuda()\nassert m.device.type == 'cuda'\n",
                                       encoding="utf-8")
    report = _report(capsys, str(tmp_path), "--fix")
    assert report["fixes"]["created"] and report["fixes"]["files"]
    assert _errors(report_schema, report) == []
    broken = {**report, "fixes": {**report["fixes"], "mode": "apply"}}
    assert _errors(report_schema, broken)
