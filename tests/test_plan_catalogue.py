"""rules/plan/*.toml: loaded and checked at load (auditor/plan/catalogue.py); a broken file stops the
run naming the file and the row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from auditor import targets
from auditor.checks.registry import all_rules
from auditor.plan import catalogue
from auditor.plan.catalogue import check_rules, plan_catalogue
from auditor.targets import CatalogueError

ROOT = Path(__file__).resolve().parent.parent


def test_the_shipped_plan_catalogue_loads_and_names_only_real_rules_and_targets():
    loaded = plan_catalogue()
    check_rules(loaded, {rule.name for rule in all_rules()})
    assert set(loaded.notes) <= set(targets.names())
    assert {"rocm", "tpu", "trainium", "mps", "xpu", "cpu"} <= set(loaded.notes)
    assert loaded.kind_of("hardcoded-cuda-device") == "device"
    assert loaded.kind_of("no-such-rule") == "other"
    assert loaded.notes_for("tpu").legacy in loaded.paths
    for notes in loaded.notes.values():  # a verified or inferred fact names its source
        for change in notes.changes:
            assert change.fact.status == "unverified" or change.fact.source.strip(), (notes.target, change)


def test_every_rule_has_a_kind():
    loaded = plan_catalogue()
    missing = sorted(rule.name for rule in all_rules() if rule.name not in loaded.kinds)  # "other" too, by name
    assert not missing, missing


def test_a_rule_name_nothing_loads_is_refused():
    with pytest.raises(CatalogueError, match="names no rule"):
        check_rules(plan_catalogue(), {"hardcoded-cuda-device"})


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """A copy of the catalogue folder the test may break; the cache of the loader cleared around it."""
    shutil.copytree(ROOT / "rules", tmp_path / "rules")
    monkeypatch.setattr(catalogue, "catalogue_dir", lambda: tmp_path / "rules")
    plan_catalogue.cache_clear()
    yield tmp_path / "rules" / "plan"
    plan_catalogue.cache_clear()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(("stem", "old", "new", "message"), [
    ("targets", "[target.rocm]", "[target.rokm]", r"targets.toml \[target.rokm\]: 'rokm' is not a target"),
    ("targets", "status = 'verified'\nsource = 'https://docs.pytorch.org/docs/2.13/notes/hip.html'",
     "status = 'verified'\nsource = ''", r"targets.toml \[\[target.rocm.change\]\] #1: a verified fact needs its `source`"),
    ("targets", "topic = 'device'", "topic = 'devices'", r"unknown topic 'devices'"),
    ("plan", "hardcoded-cuda-device = { bucket = 'minutes'", "hardcoded-cuda-device = { bucket = 'weeks'",
     r"plan.toml \[effort.rules\] hardcoded-cuda-device: `bucket` must be one of"),
    ("tools", "[tool.sglang.support]\nrocm = { level = 'supported'", "[tool.sglang.support]\nrocm = { level = 'fine'",
     r"tools.toml \[tool.sglang.support\] rocm: `level` must be one of"),
    ("signals", "kind = ", "kind = 'weather' #", r"signals.toml \[\[signal\]\] #1: unknown kind 'weather'"),
    ("plan", "examples = { shift = -1, optional = true", "example = { shift = -1, optional = true",
     r"plan.toml \[effort.component\] example: names nothing in rules/components.toml `kinds`"),
    ("plan", "docs = { shift = -1, optional = true", "docs = { shift = -1, optional = 'yes'",
     r"plan.toml \[effort.component\] docs: `optional` must be true or false"),
    ("plan", "containers = { shift = 0", "containers = { shift = 1",
     r"plan.toml \[effort.component\] containers: `shift` must be an integer, 0 or less"),
    ("plan", "cloud_kinds = ['cloud'", "cloud_kinds = ['clouds'",
     r"plan.toml \[ranking\] cloud_kinds: names the signal kinds .*; not 'clouds'"),
    ("plan", "display = { shift = -1, reason = 'only shown", "shown = { shift = -1, reason = 'only shown",
     r"plan.toml \[effort.context\] shown: names nothing in rules/contexts.toml `order`"),
])
def test_a_broken_row_is_named(broken, stem, old, new, message):
    edit(broken / f"{stem}.toml", old, new)
    with pytest.raises(CatalogueError, match=message):
        plan_catalogue()


def test_a_missing_file_and_bad_toml_say_so(broken):
    (broken / "tools.toml").unlink()
    with pytest.raises(CatalogueError, match=r"rules/plan/tools.toml is missing"):
        plan_catalogue()
    plan_catalogue.cache_clear()
    (broken / "tools.toml").write_text("[tool\n", encoding="utf-8")
    with pytest.raises(CatalogueError, match=r"rules/plan/tools.toml: "):
        plan_catalogue()
