"""Comparing models by name in Chromium (issue 30, deliverable 8), at 1,400 and 375 px.

A reader types a model's name in the compare page's search box (its suggestions are the scored
models' names and addresses), and each pin or unpin updates the comparison in place: the page is not
reloaded (a mark set on ``window`` survives), the address bar keeps
``?models=`` so a reload shows the same comparison, and the radar is drawn again. On a phone the
radar's axis labels lie inside the chart's box. Without JavaScript the same form still works, by
full page loads. On the leaderboard, a pin moves its row up the same way, without a reload, and
the filters keep the pins. Screenshots: var/screenshots/<test name>.png.
"""

from __future__ import annotations

import re

import pytest
from playwright_api import Page, expect
from web_fixture import WebFixture

pytestmark = pytest.mark.browser

COMPARE = "/compare/?benchmark=blurb-mini&models=cedar-bert,dogwood-bert"
RADAR = "div.chart[data-figure].js-plotly-plot"
WIDTHS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 375, "height": 812}}
NOT_RELOADED = "() => window.__compareMark === 'still here'"
# Every text of the drawn radar (axis labels, ticks, title, legend) inside the chart's own box.
RADAR_TEXT_OUTSIDE = """() => {
    const chart = document.querySelector('div.chart[data-figure]');
    const box = chart.getBoundingClientRect();
    return [...chart.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent, left: r.left - box.left, right: box.right - r.right};
    }).filter(t => t.left < -0.5 || t.right < -0.5);
}"""


def compared(page: Page) -> list[str]:
    return [name.strip() for name in page.locator(".compare-pins li > a").all_inner_texts()]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_model_found_by_its_name_joins_the_comparison_without_a_reload(
    web: WebFixture, browser, live_site, screenshot_path, width: str
):
    context = browser.new_context(base_url=live_site.url, viewport=WIDTHS[width])
    try:
        page = context.new_page()
        page.goto(COMPARE)
        page.wait_for_selector(RADAR)
        assert compared(page) == ["Cedar-BERT", "Dogwood-BERT"]
        suggestions = page.locator("#compare-suggestions option").evaluate_all(
            "options => options.map(o => [o.value, o.label])"
        )
        assert ["papers/alder-bert", "Alder-BERT"] in suggestions
        assert web.private.name not in str(suggestions)  # alice's private model, to an anonymous reader
        page.evaluate("() => { window.__compareMark = 'still here'; }")

        box = page.get_by_role("combobox", name="Add a model: its name or address")
        box.fill("Alder-BERT")
        box.press("Enter")
        expect(page.locator(".compare-pins li > a")).to_have_count(3)
        assert compared(page) == ["Cedar-BERT", "Dogwood-BERT", "Alder-BERT"]
        assert page.evaluate(NOT_RELOADED), "adding a model reloaded the page"
        assert re.search(r"[?&]models=cedar-bert,dogwood-bert,alder-bert(&|$)", page.url), page.url
        expect(page.locator("#compare-status")).to_contain_text("Added Alder-BERT.")
        expect(box).to_be_focused()
        page.wait_for_selector(RADAR)
        assert page.locator(f"{RADAR} .scatterlayer .trace").count() == 3  # the radar drawn again, one polygon each
        page.screenshot(path=str(screenshot_path), full_page=True)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= page.viewport_size["width"]
        assert page.evaluate(RADAR_TEXT_OUTSIDE) == []

        page.get_by_role("button", name="Remove Cedar-BERT").click()
        expect(page.locator(".compare-pins li > a")).to_have_count(2)
        assert compared(page) == ["Dogwood-BERT", "Alder-BERT"]
        assert page.evaluate(NOT_RELOADED), "removing a model reloaded the page"
        assert re.search(r"[?&]models=dogwood-bert,alder-bert(&|$)", page.url), page.url
        table = page.locator("table", has=page.locator("#compare-caption"))
        expect(table.locator("thead")).to_contain_text("Difference to Dogwood-BERT")

        page.reload()  # the address bar holds the comparison
        assert compared(page) == ["Dogwood-BERT", "Alder-BERT"]
    finally:
        context.close()


def test_a_name_that_finds_nothing_is_said_beside_the_box_without_a_reload(web: WebFixture, page: Page):
    page.goto(COMPARE)
    page.evaluate("() => { window.__compareMark = 'still here'; }")
    box = page.get_by_label("Add a model: its name or address")
    box.fill("Nonesuch-BERT")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator("#compare-problem")).to_have_text("No model named Nonesuch-BERT was found.")
    expect(page.locator("#compare-status")).to_have_text("No model named Nonesuch-BERT was found.")
    assert page.evaluate(NOT_RELOADED)
    assert compared(page) == ["Cedar-BERT", "Dogwood-BERT"]
    assert re.search(r"[?&]models=cedar-bert,dogwood-bert(&|$)", page.url), page.url  # not ?add=


def test_without_javascript_the_same_form_adds_and_removes_by_full_page_loads(web: WebFixture, browser, live_site):
    context = browser.new_context(base_url=live_site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(COMPARE)
        page.get_by_label("Add a model: its name or address").fill("papers/birch-roberta")
        page.get_by_role("button", name="Add", exact=True).click()
        page.wait_for_url(re.compile(r"models=cedar-bert(%2C|,)dogwood-bert(%2C|,)birch-roberta"))
        assert compared(page) == ["Cedar-BERT", "Dogwood-BERT", "Birch-RoBERTa"]
        page.get_by_role("button", name="Remove Dogwood-BERT").click()
        page.wait_for_url(re.compile(r"models=cedar-bert(%2C|,)birch-roberta($|&)"))
        assert compared(page) == ["Cedar-BERT", "Birch-RoBERTa"]
    finally:
        context.close()


def test_a_pin_on_the_leaderboard_moves_the_row_up_without_a_reload_and_filters_keep_the_pins(
    web: WebFixture, page: Page
):
    page.goto("/leaderboard/blurb-mini/")
    page.evaluate("() => { window.__compareMark = 'still here'; window.scrollTo(0, 300); }")
    page.get_by_role("link", name="Pin Dogwood-BERT").click()
    expect(page.locator("p.pins")).to_contain_text("dogwood-bert")
    assert page.evaluate(NOT_RELOADED), "pinning reloaded the page"
    assert re.search(r"[?&]pins=dogwood-bert(&|$)", page.url), page.url
    assert page.locator("table.board tbody tr").first.get_attribute("data-model") == "dogwood-bert"  # pinned first
    expect(page.get_by_role("link", name="Unpin Dogwood-BERT")).to_be_focused()
    expect(page.locator("#pins-status")).to_have_text("Pinned Dogwood-BERT.")

    page.get_by_role("link", name="Pin Cedar-BERT").click()
    expect(page.get_by_role("link", name="Compare pinned models")).to_be_visible()
    assert page.evaluate(NOT_RELOADED)
    page.get_by_label("Size", exact=True).select_option("small")  # filters.js still applies a filter on change
    page.wait_for_url(re.compile(r"size=small"))
    assert re.search(r"pins=dogwood-bert(%2C|,)cedar-bert", page.url), page.url  # the form carried the new pins
    page.get_by_role("link", name="Compare pinned models").click()
    page.wait_for_url(re.compile(r"/compare/\?benchmark=blurb-mini&models=dogwood-bert,cedar-bert"))
    assert compared(page) == ["Dogwood-BERT", "Cedar-BERT"]
