"""The plan page (`audit plan PATH --target T --format html`) and the ranking page (`audit plan
PATH --format html`) in a real browser: the demo repository's plan for tpu loads offline, opens
its plan section with the headline (per component) and what it could not see, shows the seven
steps with their efforts and their items, links an item to its file's findings and a component to
its own, and keeps a repository's file names as text; the ranking shows every target in order
with why, and a ranked target filters the page to what costs something there. Chromium and Playwright as tests/test_html_browser.py drives them (its fixtures; the same
LOCKIN_SKIP_BROWSER_TESTS opt-out)."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import test_html_browser as browser_tests

from auditor.plan.command import PlanRequest, run_plan

# The report's browser fixtures (Chromium through Playwright, the opt-out, console and request
# capture), bound here so that pytest finds them by name.
browser = browser_tests.browser
open_page = browser_tests.open_page
ROOT = browser_tests.ROOT

DEMO = "fixtures/demo-repo"
TARGET = "tpu"
EVIL = "<img src=x onerror=alert(7)>\u2028"
PAGE_LIMIT = 200_000  # bytes of the demo's plan page (bench/html_size.py measures the report's)


@dataclass(frozen=True)
class Planned:
    html: str
    plan: dict
    report: dict  # the page's own data block, what its script reads


def _plan(path: str, target: str | None = TARGET) -> Planned:
    """The page, the JSON and the page's data of the plan for `target` (None: the ranking)."""
    html = run_plan(PlanRequest(path, target, "html", cache=False))
    plan = json.loads(run_plan(PlanRequest(path, target, "json", cache=False)))
    start = html.index('<script type="application/json" id="audit-data">')
    data = html[html.index(">", start) + 1:html.index("</script>", start)]
    return Planned(html, plan, json.loads(data))


@pytest.fixture(scope="module")
def demo() -> Iterator[Planned]:
    here = os.getcwd()
    os.chdir(ROOT)  # the page's paths start with fixtures/demo-repo/, as a CI job run from the checkout has them
    try:
        yield _plan(DEMO)
    finally:
        os.chdir(here)


def _paths(loaded) -> list[str]:
    return loaded.page.locator("article.finding .loc").all_text_contents()


def test_the_plan_page_loads_offline_with_no_console_error(open_page, demo):
    loaded = open_page(demo.html, "plan.html")
    assert loaded.console == [] and loaded.requests == [] and loaded.dialogs == []
    page = loaded.page
    assert page.title() == f"lockin-auditor: plan for {TARGET} in {demo.report['scan_root']}"
    assert page.locator("header.top h1").text_content() == "lockin-auditor: migration plan"
    assert page.locator("#plan h2").text_content() == f"Plan for {TARGET}"
    assert loaded.matching() == loaded.cards() == len(demo.report["findings"]) > 0


def test_the_headline_verdict_and_score_are_the_plans(open_page, demo):
    headline = demo.plan["headline"]
    assert headline["verdict"] == "fails" and isinstance(headline["score"], float)
    row = open_page(demo.html, "plan.html").page.locator(f"#chart .chart-row[data-target='{TARGET}']")
    assert row.locator(".verdict").text_content() == headline["verdict"]
    assert row.locator(".score").text_content().split(" ")[0] == f"{headline['score']:.1f}"
    assert "verdict-fails" in row.locator(".bar").get_attribute("class")


def test_the_seven_steps_in_order_with_their_titles_and_efforts(open_page, demo):
    steps = demo.plan["steps"]
    assert len(steps) == 7
    shown = open_page(demo.html, "plan.html").page.locator("#plan li.step")
    assert shown.count() == 7
    assert [shown.nth(i).locator(".step-head strong").text_content() for i in range(7)] == [s["title"] for s in steps]
    for i, step in enumerate(steps):
        badge = shown.nth(i).locator(".step-head .effort")
        # an effort the plan states is shown; none stated (capacity, a way back) is no badge, as the markdown has it
        assert badge.all_text_contents() == ([step["effort"]] if step["effort"] else []), step["title"]
        items = shown.nth(i).locator("li.item")
        assert items.count() == len(step["items"]), step["title"]
        assert items.locator(".effort").all_text_contents() == [it["effort"] for it in step["items"] if it["effort"]]
    assert None in [s["effort"] for s in steps]  # the demo has a step without one
    assert "effort unknown" not in "".join(shown.all_text_contents())


def test_step_one_lists_the_dependencies_the_base_image_among_them(open_page, demo):
    first = demo.plan["steps"][0]
    assert first["title"] == "Dependencies first"
    items = open_page(demo.html, "plan.html").page.locator("#plan li.step").nth(0).locator("li.item")
    texts = items.all_text_contents()
    for shown, item in zip(texts, first["items"], strict=True):
        assert item["text"] in shown
    base = items.filter(has_text="the base image")
    assert base.count() == 1
    assert base.locator("button.loc").text_content() == f"{DEMO}/Dockerfile:2"
    assert {"flash-attn", "bitsandbytes", "nvidia-cublas-cu12"} <= {t.split(":")[0] for t in (i["text"] for i in first["items"])}


def test_an_item_links_to_its_files_findings(open_page, demo):
    loaded = open_page(demo.html, "plan.html")
    page = loaded.page
    items = page.locator("#plan li.item")
    planned = [item for step in demo.plan["steps"] for item in step["items"]]
    assert items.count() == len(planned)
    linked = 0
    for i, item in enumerate(planned):
        link = items.nth(i).locator("button.loc")
        if not item["path"]:
            assert link.count() == 0, item["text"]
            continue
        linked += 1
        where = f"{item['path']}:{item['line']}" if item["line"] else item["path"]
        assert link.text_content() == where
    assert linked >= 20
    every = _paths(loaded)
    for path in sorted({item["path"] for item in planned if item["path"]}):
        items.locator("button.loc", has_text=path).first.click()
        assert page.locator("#filter-path").input_value() == path
        shown = _paths(loaded)
        # every file a plan item names has findings, and its link shows those and only those
        assert shown and shown == [s for s in every if s.startswith(path + ":")], path
        assert loaded.matching() == len(shown)
        page.click("button.reset")
    assert loaded.console == []


def _effects(planned: Planned, target: str) -> list[str]:
    """Each finding's effect letter on `target`, from the page's own data block (html_data.py's layout)."""
    data = planned.report
    column, place = data["finding_fields"].index("effects"), data["targets"].index(target)
    return [data["strings"][row[column]][place] for row in data["findings"]]


def test_the_plan_section_opens_with_its_headline_and_what_it_could_not_see(open_page, demo):
    loaded = open_page(demo.html, "plan.html")
    page, head = loaded.page, demo.plan["headline"]
    box = page.locator("#plan-headline")
    assert box.is_visible()
    answer = box.locator(".answer").text_content()
    assert box.locator(".answer .verdict").text_content() == head["verdict"]
    assert f"{head['score']:.1f} on {TARGET}" in answer and head["summary"] in answer
    assert f"about {demo.plan['after_fixes']['score']:.1f} (an estimate" in answer
    reasons = box.locator("ul.reasons li")
    assert reasons.count() == len(head["blockers"]) > 0
    for i, blocker in enumerate(head["blockers"]):
        assert blocker["why"] in reasons.nth(i).text_content()
    # said plainly, above the steps: the whole list, visible
    unseen = page.locator("#plan-unseen li")
    assert unseen.all_text_contents() == demo.plan["unseen"] and unseen.first.is_visible()
    first_step = page.locator("#plan li.step").first.bounding_box()
    assert box.bounding_box()["y"] < page.locator("#plan-unseen").bounding_box()["y"] < first_step["y"]
    assert page.locator("#plan .questions li").all_text_contents() == demo.plan["questions"]
    assert loaded.console == []


def test_each_component_has_its_verdict_and_score_and_filters_the_page(open_page, demo):
    loaded = open_page(demo.html, "plan.html")
    page = loaded.page
    parts = demo.plan["headline"]["components"]
    rows = page.locator("#plan-headline tr.plan-component")
    assert [rows.nth(i).get_attribute("data-component") for i in range(rows.count())] == [c["name"] for c in parts]
    for i, part in enumerate(parts):
        row = rows.nth(i)
        assert row.locator(".verdict").text_content() == part["verdict"]
        assert row.locator("td.num").text_content() == f"{part['score']:.1f}"
        assert ("ships" in row.locator("td").first.text_content()) is part["shipped"]
        row.locator("button.part").click()
        # the link is the page's component filter: that component's findings and only those
        assert page.locator("#filter-component option:checked").text_content() == part["name"]
        assert loaded.matching() == part["findings"], part["name"]
        page.click("button.reset")
    assert loaded.matching() == len(demo.report["findings"])


def test_items_name_their_components_and_optional_ones_say_so(open_page, demo):
    page = open_page(demo.html, "plan.html").page
    planned = [item for step in demo.plan["steps"] for item in step["items"]]
    shown = page.locator("#plan li.item")
    optional = [i for i, item in enumerate(planned) if item["optional"]]
    assert optional  # the demo's notebook (docs) has some
    assert [i for i in range(shown.count()) if "optional" in shown.nth(i).get_attribute("class")] == optional
    for i, item in enumerate(planned):
        assert shown.nth(i).locator("button.part").all_text_contents() == item["components"], item["text"]
        assert shown.nth(i).locator(".optional-tag").count() == int(item["optional"])


def test_the_contents_links_reach_their_sections(open_page, demo):
    page = open_page(demo.html, "plan.html").page
    links = page.locator("nav#contents a")
    ids = [href.removeprefix("#") for href in (links.nth(i).get_attribute("href") for i in range(links.count()))]
    assert ids[:3] == ["plan", "chart", "components"] and "findings" in ids  # the plan first: its answer
    for i, section in enumerate(ids):
        links.nth(i).click()
        assert page.evaluate("location.hash") == f"#{section}"
        top = page.locator(f"section#{section}").bounding_box()["y"]
        assert abs(top) < 5 or section == ids[-1], (section, top)  # scrolled to it (the last may not reach the top)


def test_a_long_step_shows_its_largest_items_and_how_many_more(open_page, monkeypatch):
    from auditor.plan import page as plan_page

    monkeypatch.setattr(plan_page, "PAGE_ITEMS", 5)
    monkeypatch.chdir(ROOT)
    planned = _plan(DEMO)
    step = next(s for s in planned.plan["steps"] if s["key"] == "target-changes")
    assert len(step["items"]) > 5  # the JSON keeps every item
    loaded = open_page(planned.html, "cut.html")
    shown = loaded.page.locator("#plan li.step").nth(2)
    assert shown.locator("li.item").count() == 5
    assert shown.locator("li.item .effort").all_text_contents() == ["days"] * 5  # the largest first
    assert shown.locator("li.more-items").text_content().startswith(f"\u2026 and {len(step['items']) - 5} more")
    assert loaded.console == []


def test_a_repository_of_one_component_shows_no_component_table(open_page, tmp_path, monkeypatch):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "m.py").write_text("import torch\nx = torch.zeros(2).cuda()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    planned = _plan("repo")
    assert len(planned.plan["headline"]["components"]) == 1  # the headline itself
    loaded = open_page(planned.html, "one.html")
    page = loaded.page
    assert page.locator("#plan-headline").is_visible() and page.locator("#plan-headline table").count() == 0
    assert page.locator("#plan button.part").count() == 0 and page.locator("#plan li.item").count() > 0
    assert loaded.console == []


@pytest.fixture(scope="module")
def ranking() -> Iterator[Planned]:
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        yield _plan(DEMO, None)
    finally:
        os.chdir(here)


def test_the_ranking_page_shows_which_target_first(open_page, ranking):
    loaded = open_page(ranking.html, "ranking.html")
    page = loaded.page
    assert loaded.console == [] and loaded.requests == [] and loaded.dialogs == []
    assert page.title() == f"lockin-auditor: which target first in {ranking.report['scan_root']}"
    assert page.locator("header.top h1").text_content() == "lockin-auditor: which target first"
    assert page.locator("#ranking").is_visible() and page.locator("#plan").count() == 0
    assert page.locator("section.panel").first.get_attribute("id") == "ranking"  # the answer first
    rows = page.locator("#ranking tr.rank-row")
    ranked = ranking.plan["ranking"]
    assert rows.count() == len(ranked)
    for i, row in enumerate(ranked):
        shown = rows.nth(i)
        assert shown.get_attribute("id") == f"rank-{row['target']}"
        cells = shown.locator("td").all_text_contents()
        assert cells[0] == str(row["rank"]) and cells[1] == f"{row['display']} ({row['target']})"
        assert shown.locator(".verdict").text_content() == row["verdict"]
        assert cells[3] == f"{row['score']:.1f}" and cells[4] == str(row["dependencies"]) and cells[5] == f"{row['points']:.1f}"
        assert shown.locator("ul.why-list li").all_text_contents() == row["why"]
    assert page.locator("#ranking-unseen li").all_text_contents() == ranking.plan["unseen"]
    assert page.locator("#ranking .questions li").all_text_contents() == ranking.plan["questions"]
    assert ranking.plan["workload"] in page.locator("#ranking").text_content()


def test_a_ranked_target_filters_the_findings_to_what_costs_something_there(open_page, ranking):
    loaded = open_page(ranking.html, "ranking.html")
    page = loaded.page
    total = len(ranking.report["findings"])
    for row in ranking.plan["ranking"][:3]:
        target = row["target"]
        page.locator(f"#rank-{target} button.target-link").click()
        assert page.locator("#filter-target").input_value() == target
        assert "selected" in page.locator(f"#rank-{target}").get_attribute("class")
        costly = sum(1 for letter in _effects(ranking, target) if letter != "w")
        assert loaded.matching() == costly < total, target
        page.locator(f"#rank-{target} button.target-link").click()  # again: every target
        assert page.locator("#filter-target").input_value() == "" and loaded.matching() == total
    assert loaded.console == [] and loaded.requests == []


def _evil_repository(root: Path) -> Path:
    """A repository whose file and folder names and package lines hold markup and U+2028."""
    repo = root / "repo"
    (repo / f"kernels{EVIL}").mkdir(parents=True)
    (repo / f"{EVIL}.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ntorch.cuda.set_device(0)\n",
                                     encoding="utf-8")
    (repo / f"kernels{EVIL}" / "ops.py").write_text("import triton\n", encoding="utf-8")
    (repo / "requirements.txt").write_text(f"flash-attn\nnvidia-cublas-cu12{EVIL}\n", encoding="utf-8")
    (repo / "setup.py").write_text(f"from setuptools import setup\nsetup(name='x', install_requires=['cupy-cuda12x{EVIL}'])\n",
                                   encoding="utf-8")
    # a package whose name is markup: the component's name, in the headline and the items
    (repo / "pyproject.toml").write_text(f'[tool.setuptools]\npackages = ["pkg{EVIL}"]\n', encoding="utf-8")
    (repo / f"pkg{EVIL}").mkdir()
    (repo / f"pkg{EVIL}" / "__init__.py").write_text("import torch\nx = torch.zeros(2).cuda()\n", encoding="utf-8")
    return repo


def test_untrusted_names_in_plan_items_stay_text(open_page, tmp_path, monkeypatch):
    _evil_repository(tmp_path)
    monkeypatch.chdir(tmp_path)
    planned = _plan("repo")
    evil_paths = {i["path"] for s in planned.plan["steps"] for i in s["items"] if i["path"] and EVIL in i["path"]}
    assert {f"repo/{EVIL}.py", f"repo/kernels{EVIL}/ops.py"} <= evil_paths  # step 2 and step 3 name them
    assert "\u2028" not in planned.html and "<img" not in planned.html
    text = run_plan(PlanRequest("repo", TARGET, cache=False))  # the markdown: the same names kept plain
    assert "\u2028" not in text
    assert re.search(r"(?<!\\)<img", re.sub(r"`[^`\n]*`", "", text)) is None  # raw only in code spans
    loaded = open_page(planned.html, "evil-plan.html")
    page = loaded.page
    assert loaded.console == [] and loaded.requests == [] and loaded.dialogs == []
    assert page.locator("img, iframe, object, embed").count() == 0
    assert page.evaluate("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes])"
                         ".filter(a => a.name.startsWith('on')).length") == 0
    package = f"pkg{EVIL}"
    assert package in [c["name"] for c in planned.plan["headline"]["components"]]
    assert page.locator("#plan-headline button.part", has_text=package).text_content() == package  # verbatim
    assert package in page.locator("#plan li.item button.part").all_text_contents()
    links = page.locator("#plan li.item button.loc").all_text_contents()
    for path in evil_paths:
        assert any(text.startswith(path) for text in links), path  # verbatim, U+2028 and all
    page.locator("#plan li.item button.loc", has_text=f"kernels{EVIL}").first.click()
    assert page.locator("#filter-path").input_value() == f"repo/kernels{EVIL}/ops.py"
    assert loaded.matching() >= 1 and page.locator("img").count() == 0 and loaded.dialogs == []


def test_the_demo_plan_page_is_small_enough_to_attach(demo):
    """bench/html_size.py's figures for the plan page of the demo: bytes and gzip -9 bytes."""
    page = demo.html.encode("utf-8")
    compressed = len(gzip.compress(page, 9))
    assert len(page) < PAGE_LIMIT, f"{len(page):,} bytes (gzip -9: {compressed:,})"
    assert compressed < len(page) / 3
