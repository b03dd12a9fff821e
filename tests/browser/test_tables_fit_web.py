"""Tables that fit (issue 30, deliverable 3), as a reader meets them in Chromium at 1,400 px and on a 375 px phone.

On a laptop every group column of BLURB is in sight without scrolling anything; the per-dataset columns
scroll inside the table's own region while rank and model stay put. On a phone each row shows its rank,
its model and the benchmark score, and the group scores open with a tap. No page scrolls sideways at
either width. Each test leaves full-page screenshots in var/screenshots/ for a person to look at.
"""

from __future__ import annotations

import pytest
from browser_launch import SCREENSHOTS
from playwright_api import Page, expect
from web_fixture import SNAPSHOT_DATE, WebFixture

pytestmark = pytest.mark.browser

LAPTOP = {"width": 1400, "height": 900}
PHONE = {"width": 375, "height": 812}
BLURB = "/leaderboard/blurb/"
BLURB_GROUPS = (
    "NER",
    "PICO",
    "Relation Extraction",
    "Sentence Similarity",
    "Document Classification",
    "Question Answering",
)
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
PAGES = {
    "index": "/",
    "benchmark": BLURB,
    "benchmark-per-dataset": f"{BLURB}?datasets=1",
    "demo-benchmark": "/leaderboard/blurb-mini/?datasets=1",
    "snapshot": f"/leaderboard/blurb-mini/{SNAPSHOT_DATE.isoformat()}/",
    "datasets": "/datasets/",
    "dataset": "/datasets/bc5-chem/",
    "model": "/models/papers/alder-bert/",
}


def box(locator) -> dict:
    return locator.evaluate("el => { const r = el.getBoundingClientRect(); return {left: r.left, right: r.right}; }")


def test_at_1400_px_every_blurb_group_column_is_in_sight_without_scrolling(
    web: WebFixture, page: Page, screenshot_path
):
    page.set_viewport_size(LAPTOP)
    page.goto(BLURB)
    wrap = page.locator(".table-wrap", has=page.locator("table.board"))
    assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth"), "BLURB's table scrolls at 1,400 px"
    assert page.evaluate(SIDEWAYS) <= 0
    for group in BLURB_GROUPS:
        header = page.locator("table.board thead th", has_text=group)
        expect(header).to_be_visible()
        assert box(header)["right"] <= LAPTOP["width"], f"{group} is cut off at 1,400 px"


def test_per_dataset_columns_scroll_inside_the_table_with_rank_and_model_sticky(web: WebFixture, page: Page):
    page.set_viewport_size(LAPTOP)
    page.goto(f"{BLURB}?datasets=1")
    assert page.evaluate(SIDEWAYS) <= 0, "the per-dataset columns widen the page"
    wrap = page.locator(".table-wrap", has=page.locator("table.board"))
    assert wrap.evaluate("el => el.scrollWidth > el.clientWidth"), "13 datasets and 6 groups fit? then nothing scrolls"
    first = page.locator("table.board tbody tr").first
    rank, model, score = first.locator("td.rank"), first.locator("th[scope=row]"), first.locator("td.summary").first
    before = box(rank)["left"], box(model)["left"], box(score)["left"]
    wrap.evaluate("el => { el.scrollLeft = 600; }")
    assert wrap.evaluate("el => el.scrollLeft") > 0
    after = box(rank)["left"], box(model)["left"], box(score)["left"]
    assert after[:2] == pytest.approx(before[:2], abs=1), "rank and model moved with the scroll"
    assert after[2] < before[2] - 100, "the score column did not scroll"
    assert model.evaluate("el => getComputedStyle(el).position") == "sticky"
    page.screenshot(path=str(SCREENSHOTS / "tables-fit-per-dataset-scrolled-1400.png"), full_page=True)


def test_on_a_phone_each_row_shows_rank_model_and_score_and_the_groups_open_with_a_tap(
    web: WebFixture, browser, live_site, screenshot_path
):
    phone = browser.new_context(base_url=live_site.url, viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = phone.new_page()
        page.goto(BLURB)
        assert page.evaluate(SIDEWAYS) <= 0
        rows = page.locator("table.board tbody tr")
        assert rows.count() == 15
        for index in range(rows.count()):
            row = rows.nth(index)
            for cell in (row.locator("td.rank"), row.locator("th[scope=row] a").first, row.locator("td.summary").first):
                expect(cell).to_be_visible()
                assert box(cell)["right"] <= PHONE["width"], f"row {index}: {cell} is off the screen"
        expect(page.locator("table.board thead th.group").first).to_be_hidden()
        first = rows.first
        groups = first.locator(".row-groups")
        expect(groups.get_by_text("Question Answering")).to_be_hidden()
        groups.locator("summary").tap()
        expect(groups.get_by_text("Question Answering")).to_be_visible()
        assert page.evaluate(SIDEWAYS) <= 0, "the opened groups widen the page"
        page.screenshot(path=str(screenshot_path), full_page=True)
        page.locator("table.board caption").scroll_into_view_if_needed()
        # the screen as a phone shows it (the full page above is too tall to read)
        page.screenshot(path=str(SCREENSHOTS / "tables-fit-phone-groups-open-375.png"))
        second = rows.nth(1).locator(".row-groups")
        second.locator("summary").focus()  # a native <summary>: the keyboard opens it too, without script
        page.keyboard.press("Enter")
        expect(second.get_by_text("Question Answering")).to_be_visible()
    finally:
        phone.close()


@pytest.mark.parametrize("width", [LAPTOP["width"], PHONE["width"]])
@pytest.mark.parametrize("name", list(PAGES))
def test_no_page_scrolls_sideways(web: WebFixture, page: Page, name: str, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    response = page.goto(PAGES[name])
    assert response is not None and response.status == 200, PAGES[name]
    assert page.evaluate(SIDEWAYS) <= 0, f"{PAGES[name]} scrolls sideways at {width} px"


def test_filters_apply_on_change_and_the_url_keeps_them(web: WebFixture, page: Page):
    page.set_viewport_size(LAPTOP)
    page.goto(BLURB)
    with page.expect_navigation():
        page.get_by_label("Origin").select_option("reported")
    assert "origin=reported" in page.url
    with page.expect_navigation():
        page.get_by_label("Per-dataset columns").check()
    assert "datasets=1" in page.url and "origin=reported" in page.url
    expect(page.get_by_role("button", name="Apply")).to_be_visible()  # kept for readers without script


def test_the_rank_terms_link_to_how_ranks_and_scores_work(web: WebFixture, page: Page):
    page.set_viewport_size(PHONE)
    page.goto(BLURB)
    page.get_by_role("link", name="paired bootstrap").first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("How ranks and scores work")
    assert page.evaluate(SIDEWAYS) <= 0


@pytest.mark.parametrize(("path", "label"), [("/", "Models"), ("/datasets/", "Imported")])
def test_on_a_phone_a_listing_shows_every_column_of_each_row_on_screen(
    web: WebFixture, page: Page, path: str, label: str
):
    """The benchmarks on the home page and the datasets are lists on a phone: the last column of each row (its
    models, whether it is imported) is on screen, not in a scrolled-off part of the table."""
    page.set_viewport_size(PHONE)
    page.goto(path)
    assert page.evaluate(SIDEWAYS) <= 0
    cells = page.locator(f'table.listing td[data-label="{label}"]')
    assert cells.count() > 0
    for index in range(cells.count()):
        cell = cells.nth(index)
        expect(cell).to_be_visible()
        assert box(cell)["right"] <= PHONE["width"], f"{path}: row {index}'s {label} is off the screen"
    page.screenshot(path=str(SCREENSHOTS / f"tables-fit-listing{path.strip('/').replace('/', '-') or '-home'}-375.png"))
