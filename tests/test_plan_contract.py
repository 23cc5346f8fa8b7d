"""The plan's JSON (`audit plan PATH --target T --format json`, and the ranking without --target)
is a contract of its own: its keys are pinned here. A change that breaks these tests must bump
auditor.plan.build.PLAN_FORMAT_VERSION (independent of the report's format_version)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import TOOL_NAME, __version__
from auditor.cli import main
from auditor.plan.build import PLAN_FORMAT_VERSION
from auditor.targets import names as target_names

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo-repo"

PLAN_KEYS = {"plan_format_version", "tool", "root", "target", "display", "headline", "steps", "after_fixes",
             "signals", "unseen", "questions"}
HEADLINE_KEYS = {"verdict", "score", "summary", "blockers", "components"}
COMPONENT_KEYS = {"name", "kind", "shipped", "paths", "findings", "verdict", "score", "blockers"}
BLOCKER_KEYS = {"rule", "path", "line", "why"}
AFTER_KEYS = {"score", "verdict", "fixed", "estimate", "how"}
STEP_KEYS = {"number", "key", "title", "summary", "effort", "reason", "items"}
STEP_EXTRA = {"dependencies": set(), "hardware-choices": {"owner", "groups"},
              "target-changes": {"stack", "notes", "legacy", "docs"}, "capacity": {"checklist"},
              "parity": {"file", "written"}, "benchmark": {"file", "written", "conditions"}, "way-back": {"keep"}}
ITEM_KEYS = {"text", "path", "line", "effort", "reason", "components", "optional"}
DEPENDENCY_KEYS = ITEM_KEYS | {"rule", "name", "package", "replacement", "places", "works"}
GROUP_KEYS = {"kind", "title", "owner", "lines", "fixed_by_audit_fix", "files", "signals", "effort"}
NOTE_KEYS = {"topic", "text", "status", "source"}
LEGACY_KEYS = {"key", "title", "source", "in_use", "changes"}
CHECK_KEYS = {"item", "text", "fact", "signals"}
SIGNAL_KEYS = {"kind", "what", "provider", "path", "line", "text"}
RANKING_KEYS = {"plan_format_version", "tool", "root", "ranking", "tools", "workload", "edge", "signals", "unseen",
                "questions"}
ROW_KEYS = {"rank", "target", "display", "verdict", "score", "dependencies", "points", "host", "why"}
BUCKETS = {"minutes", "hours", "days", "no equivalent", None}


def plan_json(capsys, *args: str) -> dict:
    assert main(["plan", *args, "--format", "json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def tpu_plan() -> dict:
    from auditor.plan.command import PlanRequest, run_plan

    return json.loads(run_plan(PlanRequest(str(DEMO), "tpu", "json", cache=False)))


def test_the_plan_format_version_is_pinned():
    assert PLAN_FORMAT_VERSION == 2  # 2: per component (the headline's components, each item's)


def test_plan_keys(tpu_plan):
    assert set(tpu_plan) == PLAN_KEYS
    assert tpu_plan["plan_format_version"] == PLAN_FORMAT_VERSION
    assert tpu_plan["tool"] == {"name": TOOL_NAME, "version": __version__}
    assert tpu_plan["target"] == "tpu"
    assert set(tpu_plan["headline"]) == HEADLINE_KEYS
    assert all(set(b) == BLOCKER_KEYS for b in tpu_plan["headline"]["blockers"])
    parts = tpu_plan["headline"]["components"]
    assert parts and all(set(c) == COMPONENT_KEYS for c in parts)
    assert all(set(b) == BLOCKER_KEYS for c in parts for b in c["blockers"])
    assert set(tpu_plan["after_fixes"]) == AFTER_KEYS and tpu_plan["after_fixes"]["estimate"] is True
    assert all(isinstance(u, str) for u in tpu_plan["unseen"] + tpu_plan["questions"])
    assert all(set(s) == SIGNAL_KEYS for s in tpu_plan["signals"])


def test_the_seven_steps_in_order_with_their_keys(tpu_plan):
    steps = tpu_plan["steps"]
    assert [s["number"] for s in steps] == [1, 2, 3, 4, 5, 6, 7]
    assert [s["key"] for s in steps] == list(STEP_EXTRA)
    for step in steps:
        assert set(step) == STEP_KEYS | STEP_EXTRA[step["key"]], step["key"]
        assert step["effort"] in BUCKETS
        for item in step["items"]:
            assert ITEM_KEYS <= set(item) and item["effort"] in BUCKETS, item
            assert isinstance(item["optional"], bool) and all(isinstance(c, str) for c in item["components"]), item
    by_key = {s["key"]: s for s in steps}
    assert all(set(i) == DEPENDENCY_KEYS for i in by_key["dependencies"]["items"])
    assert all(set(g) == GROUP_KEYS for g in by_key["hardware-choices"]["groups"])
    changes = by_key["target-changes"]
    assert all(set(n) == NOTE_KEYS for n in changes["notes"])
    assert set(changes["legacy"]) == LEGACY_KEYS
    assert all(set(c) == CHECK_KEYS for c in by_key["capacity"]["checklist"])


def test_ranking_keys(capsys):
    ranking = plan_json(capsys, str(DEMO))
    assert set(ranking) == RANKING_KEYS
    assert [r["rank"] for r in ranking["ranking"]] == list(range(1, len(target_names()) + 1))
    assert {r["target"] for r in ranking["ranking"]} == set(target_names())
    assert all(set(r) == ROW_KEYS for r in ranking["ranking"])


def test_the_html_page_holds_the_plan(capsys):
    assert main(["plan", str(DEMO), "--target", "tpu", "--format", "html", "--no-cache"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and "plan for tpu" in page
    assert '"One place for hardware choices"' in page
