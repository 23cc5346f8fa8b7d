"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright.

The page must load from disk with no console error and no request beyond its own file, draw its
chart, narrow the findings with each filter, keep every untrusted string as text and survive
U+2028 in its data.

Chromium is /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it when it is
missing). Without it these tests fail, saying so: a browser test that skips where the browser
is missing would pass in a CI that never ran it. To run the rest of the suite on a machine
without Chromium, set LOCKIN_SKIP_BROWSER_TESTS=1 (.ci/run unsets it)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from html_samples import (
    BREAKOUT,
    EVIL_PATH,
    SCRIPT,
    SEPARATORS,
    TARGETS,
    WITHHELD,
    bulk_report,
    report,
    sample_plan,
    sample_report,
    withheld_report,
)

from auditor.cli import main
from auditor.report.html_report import render_html

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
OPT_OUT = "LOCKIN_SKIP_BROWSER_TESTS"
# What works headless on a CI machine, root and no GPU, and keeps Chromium from calling home.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 20_000


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install '.[test]')"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium is not at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    why = _missing()
    if why is not None:
        if os.environ.get(OPT_OUT) == "1":
            pytest.skip(f"{why}; skipped because {OPT_OUT}=1")
        pytest.fail(f"{why}. The HTML report's browser tests need it: install it, or set {OPT_OUT}=1 to skip them "
                    f"outside CI", pytrace=False)
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")  # a new, empty --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Loaded:
    page: object
    console: list[str] = field(default_factory=list)  # console errors and warnings, uncaught exceptions
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def matching(self) -> int:
        return int(self.page.locator("#shown-count").get_attribute("data-matching"))

    def cards(self) -> int:
        return self.page.locator("article.finding").count()


@pytest.fixture
def open_page(browser, tmp_path) -> Iterator[object]:
    pages = []

    def load(page_html: str, name: str = "report.html") -> Loaded:
        path = tmp_path / name
        path.write_text(page_html, encoding="utf-8")
        page = browser.new_page()
        loaded = Loaded(page)
        page.on("console", lambda m: m.type in ("error", "warning") and loaded.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: loaded.console.append(f"exception: {e}"))
        page.on("request", lambda r: loaded.requests.append(r.url))

        def dialog(d: object) -> None:
            loaded.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", state="attached")
        loaded.requests.remove(path.as_uri())
        pages.append(page)
        return loaded

    yield load
    for page in pages:
        page.close()


def _effect(f: dict, target: str) -> str:
    return f["targets"].get(target, "raises")


def test_page_loads_offline_with_no_console_error(open_page):
    loaded = open_page(render_html(sample_report(), sample_plan()))
    assert loaded.console == [] and loaded.requests == [] and loaded.dialogs == []
    assert loaded.matching() == loaded.cards() == len(sample_report()["findings"])
    for section in ("chart", "components", "plan", "matrix", "files", "errors", "findings"):
        assert loaded.page.locator(f"section#{section}").is_visible(), section


def test_chart_draws_a_bar_per_target(open_page):
    document = sample_report()
    page = open_page(render_html(document)).page
    rows = page.locator("#chart .chart-row")
    assert [rows.nth(i).get_attribute("data-target") for i in range(rows.count())] == [*TARGETS, "overall"]
    for i, target in enumerate([*TARGETS, "overall"]):
        bar = rows.nth(i).locator(".bar").bounding_box()
        track = rows.nth(i).locator(".bar-track").bounding_box()
        assert bar["width"] > 0 and bar["height"] > 0, target
        assert abs(bar["width"] / (track["width"] - 2) - document["scores"][target] / 100) < 0.02, target
        if target != "overall":
            verdict = document["verdicts"][target]["verdict"]
            assert rows.nth(i).locator(".verdict").text_content() == verdict
            assert "verdict-" + ("runs" if verdict == "runs" else "fails") in rows.nth(i).locator(".bar").get_attribute("class")


def test_a_withheld_report_says_so_and_guesses_no_score(open_page):
    """An incomplete run: every score reads "withheld" with an empty bar, `unknown` has its own badge,
    its reason names the file that was not checked (no rule, no line), and the page says why."""
    loaded = open_page(render_html(withheld_report()))
    assert loaded.console == [] and loaded.requests == []
    page = loaded.page
    assert page.locator(".top .withheld").text_content() == "Scores withheld: " + WITHHELD
    rows = page.locator("#chart .chart-row")
    assert [rows.nth(i).get_attribute("data-target") for i in range(rows.count())] == [*TARGETS, "overall"]
    assert "npu" in TARGETS
    for i in range(rows.count()):
        assert rows.nth(i).locator(".score").text_content() == "withheld"
        assert rows.nth(i).locator(".bar").bounding_box()["width"] <= 3  # the 2px minimum, no score drawn
    rocm = page.locator("#chart .chart-row[data-target='rocm']")
    assert rocm.locator(".verdict").text_content() == "unknown"
    assert "verdict-unknown" in rocm.locator(".verdict").get_attribute("class")
    assert "verdict-unknown" in rocm.locator(".bar").get_attribute("class")
    why = page.locator("details.why", has_text="Why unknown on rocm")
    why.locator("summary").click()
    reason = why.locator("ul.reasons li")
    assert reason.count() == 1 and reason.locator("code").count() == 0
    assert reason.text_content() == "not checked (internal error): what it holds is unknown pkg/boom.py"
    overall = page.locator("#chart .chart-row[data-target='overall'] .verdict")
    assert overall.text_content() == "mean of core v1 (6 targets)"
    assert overall.get_attribute("title") == "rocm, tpu, trainium, mps, xpu, cpu"


def _expected(findings: list[dict], **chosen: str) -> int:
    """How many findings each filter leaves, as the README says: a target keeps what degrades or
    raises there; a component what it holds (by path here); the rest match exactly, the path
    filter as a case-insensitive part of the path."""
    def keep(f: dict) -> bool:
        if "target" in chosen and _effect(f, chosen["target"]) == "works":
            return False
        if "component" in chosen and not f["path"].startswith(chosen["component"] + "/"):
            return False
        if "category" in chosen and f["category"] != chosen["category"]:
            return False
        if "severity" in chosen and f["severity"] != chosen["severity"]:
            return False
        return "path" not in chosen or chosen["path"].lower() in f["path"].lower()

    return sum(map(keep, findings))


@pytest.mark.parametrize(("control", "value", "chosen"), [
    ("#filter-target", "rocm", {"target": "rocm"}),
    ("#filter-target", "mps", {"target": "mps"}),
    ("#filter-component", "0", {"component": "pkg"}),
    ("#filter-component", "1", {"component": "examples"}),
    ("#filter-category", "kernel", {"category": "kernel"}),
    ("#filter-severity", "blocker", {"severity": "blocker"}),
    ("#filter-path", "PKG/", {"path": "PKG/"}),
])
def test_each_filter_changes_what_is_shown(open_page, control, value, chosen):
    findings = sample_report()["findings"]
    loaded = open_page(render_html(sample_report()))
    expected = _expected(findings, **chosen)
    assert 0 < expected < len(findings)
    if control == "#filter-path":
        loaded.page.fill(control, value)
    else:
        loaded.page.select_option(control, value)
    assert loaded.matching() == loaded.cards() == expected
    # each card shown is one that should be
    indexes = [int(i) for i in loaded.page.locator("article.finding").evaluate_all("cs => cs.map(c => c.dataset.index)")]
    assert all(_expected([findings[i]], **chosen) == 1 for i in indexes)
    loaded.page.click("button.reset")
    assert loaded.matching() == len(findings) and loaded.console == []


def test_filters_combine_and_the_page_links_set_them(open_page):
    findings = sample_report()["findings"]
    loaded = open_page(render_html(sample_report(), sample_plan()))
    page = loaded.page
    page.select_option("#filter-target", "cpu")
    page.select_option("#filter-category", "device")
    assert loaded.matching() == _expected(findings, target="cpu", category="device") == 4
    page.click("button.reset")
    page.click("#chart .chart-row[data-target='mps'] button.target-label")  # the chart picks a target
    assert page.locator("#filter-target").input_value() == "mps"
    assert loaded.matching() == _expected(findings, target="mps")
    assert page.locator("#chart .chart-row.selected").get_attribute("data-target") == "mps"
    assert page.locator("#files").text_content().count("On mps.") == 1  # the files table follows the target
    page.click("button.reset")
    page.locator("#matrix tbody tr", has_text="dependency").locator("button.count").nth(0).click()  # dependency x blocker
    assert (page.locator("#filter-category").input_value(), page.locator("#filter-severity").input_value()) == (
        "dependency", "blocker")
    assert loaded.matching() == _expected(findings, category="dependency", severity="blocker") == 1
    page.click("button.reset")
    page.locator("#components tr.component", has_text="notebooks").locator("button").click()
    assert loaded.matching() == _expected(findings, component="notebooks") == 1
    page.click("button.reset")
    page.locator("#files button.link", has_text="requirements.txt").click()
    assert page.locator("#filter-path").input_value() == "requirements.txt" and loaded.matching() == 1
    page.click("button.reset")
    page.locator("#plan button.link", has_text="pkg/core.py").click()
    assert loaded.matching() == _expected(findings, path="pkg/core.py") == 2
    page.select_option("#filter-component", "-1")  # with the path: nothing in pkg/ is outside every component
    assert loaded.matching() == loaded.cards() == 0
    assert loaded.console == []


def test_untrusted_text_stays_text(open_page):
    loaded = open_page(render_html(sample_report(), sample_plan()))
    page = loaded.page
    assert loaded.dialogs == [] and loaded.console == []
    assert page.locator("img, svg, b, i, iframe, object, embed").count() == 0
    assert page.locator("script").count() == 2
    assert page.evaluate("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes])"
                         ".filter(a => a.name.startsWith('on')).length") == 0
    snippets = page.locator("pre.snippet code").all_text_contents()
    assert SCRIPT in snippets and BREAKOUT in snippets
    assert any(EVIL_PATH in t for t in page.locator("article.finding .loc").all_text_contents())
    assert "<b>bold</b>" in page.locator("article.finding .name").all_text_contents()
    assert "<img src=x onerror=alert(6)>" in page.locator(".edits code.content").all_text_contents()
    assert page.locator("#components").get_by_text("examples <i>x</i>").count() == 1
    assert page.locator("#plan").get_by_text(f"replace flash-attn {SCRIPT}").count() == 1
    assert page.locator("#errors").get_by_text(f"bad {SCRIPT}", exact=False).count() == 1
    assert page.locator("#chart details.why", has_text="on tpu").text_content().count(EVIL_PATH) == 1  # a reason
    page.select_option("#filter-target", "cpu")  # redrawing keeps it text
    page.fill("#filter-path", "<img")
    assert loaded.matching() == 1 and page.locator("img").count() == 0 and loaded.dialogs == []


def test_line_separators_in_the_data_do_not_break_the_page(open_page):
    loaded = open_page(render_html(sample_report()))
    messages = loaded.page.locator("article.finding .message").all_text_contents()
    assert any(SEPARATORS in m for m in messages)
    assert loaded.console == []


def test_notebook_findings_show_their_cell_and_fixes_their_rewrite(open_page):
    page = open_page(render_html(sample_report())).page
    notebook = page.locator("article.finding", has_text="explore.ipynb")
    assert notebook.locator(".loc").text_content() == "notebooks/explore.ipynb:cell 3:2:1"
    assert notebook.locator(".fix-reason").text_content() == "Only shown: the torch floor is 2.1"
    safe = page.locator("article.finding", has_text="pkg/core.py:3:5")
    assert safe.locator(".applicability").text_content() == "fix: safe"
    assert safe.locator(".edits li").text_content() == "line 3:15\u20133:21 \u2192 to(torch.accelerator.current_accelerator())"
    plain = page.locator("article.finding", has_text="requirements.txt")
    assert plain.locator(".fix").count() == 0 and plain.locator(".suggestion").count() == 0


def test_plan_steps_show_their_effort(open_page):
    page = open_page(render_html(sample_report(), sample_plan())).page
    steps = page.locator("#plan li.step")
    assert steps.count() == 2
    assert steps.nth(0).locator(".step-head .effort").text_content() == "hours"
    assert steps.nth(0).locator("li.item .effort").all_text_contents() == ["minutes", "no equivalent"]
    assert steps.nth(1).locator(".step-head").text_content() == "One place for hardware choices days"
    assert open_page(render_html(sample_report()), "no-plan.html").page.locator("#plan").count() == 0


def test_an_empty_report_and_a_bare_dict_draw_a_page(open_page):
    loaded = open_page(render_html(report([])))
    assert loaded.console == [] and (loaded.matching(), loaded.cards()) == (0, 0)
    assert loaded.page.locator("#files .empty").text_content() == "No file costs points here."
    assert loaded.page.locator("#components, #plan, #errors").count() == 0
    bare = open_page(render_html({}), "bare.html")
    assert bare.console == [] and bare.matching() == 0 and bare.page.locator("#chart .chart-row").count() == 1


def test_long_lists_are_drawn_a_page_at_a_time(open_page):
    loaded = open_page(render_html(bulk_report(450)))
    assert (loaded.matching(), loaded.cards()) == (450, 200)
    loaded.page.click("button.more")
    assert loaded.cards() == 400
    loaded.page.click("button.more")
    assert loaded.cards() == 450 and loaded.page.locator("button.more").is_hidden()
    loaded.page.fill("#filter-path", "file_00")
    assert (loaded.matching(), loaded.cards()) == (100, 100)


def test_the_demo_repository_page(open_page, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "demo.html"
    assert main(["fixtures/demo-repo", "--format", "html", "--no-cache", "--isolated", "-o", str(out)]) == 0
    assert main(["fixtures/demo-repo", "--format", "json", "--no-cache", "--isolated"]) == 0
    document = json.loads(capsys.readouterr().out)
    loaded = open_page(out.read_text(encoding="utf-8"), "demo-page.html")
    assert loaded.console == [] and loaded.requests == [] and loaded.dialogs == []
    assert loaded.matching() == loaded.cards() == len(document["findings"])
    assert loaded.page.locator("#chart .bar").count() == len(document["targets"]) + 1
    first = loaded.page.locator("#files tbody tr").first.locator("td").all_text_contents()
    assert float(first[0]) > 0 and first[2].startswith("fixtures/demo-repo/")
    assert loaded.page.locator("article.finding .loc", has_text=":cell ").count() == sum(
        f["cell"] is not None for f in document["findings"])
