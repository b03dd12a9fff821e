"""What a reader does on the leaderboard, in a real browser: each test is one user story.

The board is tests/web_fixture.py's: five public models whose ranks are known in advance (a tied
pair, an unranked one) and a private model of alice's with an unmistakable name. Each test leaves
a full-page screenshot in var/screenshots/<test name>.png (tests/browser/conftest.py).
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from playwright_api import BrowserContext, Page, expect
from web_fixture import MISSING_DATASET, PUBLIC_MODELS, SNAPSHOT_DATE, WebFixture, WebModel

pytestmark = pytest.mark.browser

BOARD = "/leaderboard/blurb-mini/"
BOARD_ROWS = "table.board tbody tr"
CHART = ".js-plotly-plot"  # the class plotly.js gives a div it has drawn into
# Every chart of the page drawn (templates/leaderboard/_chart.html's divs, drawn by charts.js).
CHARTS_DRAWN = "() => [...document.querySelectorAll('div.chart[data-figure]')].every(d => d.matches('.js-plotly-plot'))"


def board_rows(page: Page) -> list[tuple[str, str]]:
    """(rank as printed, model name) of each leaderboard row, top to bottom: ("=3", "Dogwood-BERT")."""
    cells = page.locator(BOARD_ROWS).evaluate_all(
        """rows => rows.map(row => {
            const rank = row.querySelector('.rank-value');
            return [rank ? rank.textContent.trim() : row.querySelector('td').textContent.trim(),
                    row.querySelector('th[scope=row] a').textContent.trim()];
        })"""
    )
    return [(rank, name) for rank, name in cells]


def expected(models: list[WebModel] | tuple[WebModel, ...]) -> list[tuple[str, str]]:
    return [(m.rank_label, m.name) for m in models]


def by_parameters(descending: bool) -> list[WebModel]:
    """The board sorted by size: ranked rows first, then unranked ones, each group by parameters."""
    ranked = sorted((m for m in PUBLIC_MODELS if m.rank_label != "unranked"), key=lambda m: m.parameters)
    unranked = [m for m in PUBLIC_MODELS if m.rank_label == "unranked"]
    return [*(reversed(ranked) if descending else ranked), *unranked]


def header(page: Page, label: str):
    """The column header whose sort link reads ``label`` (its text: the sort arrow is CSS-generated)."""
    return page.locator("table.board thead th").filter(has=page.locator("a", has_text=re.compile(f"^{label}$")))


def sign_in(context: BrowserContext, site) -> None:
    """Give the browser profile the session of the private model's owner, as signing in would."""
    from django.conf import settings

    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": site.owner_session, "url": site.url}])


def test_plotly_js_is_served_compressed_under_its_hashed_name_and_cached_for_good(web: WebFixture, page: Page):
    from django.templatetags.static import static

    url = static("vendor/plotly.min.js")  # what the chart pages name: collectstatic's hashed copy
    assert re.fullmatch(r"/static/vendor/plotly\.min\.[0-9a-f]{12}\.js", url)
    response = page.request.get(url, headers={"Accept-Encoding": "gzip"})
    assert response.status == 200
    assert "javascript" in response.headers["content-type"]
    assert response.headers["content-encoding"] == "gzip"  # 4.8 MB sent as about 1.5 MB
    cache = response.headers["cache-control"]
    assert "immutable" in cache and int(re.search(r"max-age=(\d+)", cache)[1]) >= 31_536_000
    assert b"plotly.js" in response.body()[:2000]


def test_a_reader_opens_the_index_then_the_leaderboard_and_sees_the_tied_pair_share_a_rank(web: WebFixture, page: Page):
    page.goto("/")
    row = page.locator("tbody tr", has=page.get_by_role("link", name=web.benchmark.name))
    expect(row.locator("td").nth(1)).to_have_text(str(len(PUBLIC_MODELS)))  # Datasets, then Models
    row.get_by_role("link", name=web.benchmark.name).click()
    page.wait_for_url(f"**{BOARD}")
    expect(page.get_by_role("heading", level=1)).to_have_text(web.benchmark.name)
    expect(page.locator(BOARD_ROWS)).to_have_count(len(PUBLIC_MODELS))
    assert board_rows(page) == expected(PUBLIC_MODELS)
    tied = page.locator('tr[data-model="dogwood-bert"] .rank-value')
    expect(tied).to_have_attribute("title", re.compile(r"^cannot be told apart from Cedar-BERT"))
    expect(page.locator('tr[data-model="elm-longformer"]')).to_contain_text(f"missing: {MISSING_DATASET}")


def test_clicking_a_column_header_sorts_by_it_and_clicking_again_flips_the_order(web: WebFixture, page: Page):
    page.goto(BOARD)
    expect(header(page, "Rank")).to_have_attribute("aria-sort", "ascending")
    expect(header(page, "Parameters")).to_have_attribute("aria-sort", "none")

    header(page, "Parameters").get_by_role("link").click()
    page.wait_for_url(re.compile(r"sort=parameters"))
    expect(header(page, "Parameters")).to_have_attribute("aria-sort", "descending")
    expect(header(page, "Rank")).to_have_attribute("aria-sort", "none")
    assert board_rows(page) == expected(by_parameters(descending=True))
    assert board_rows(page) != expected(PUBLIC_MODELS)

    header(page, "Parameters").get_by_role("link").click()
    page.wait_for_url(re.compile(r"sort=parameters.*dir=asc|dir=asc.*sort=parameters"))
    expect(header(page, "Parameters")).to_have_attribute("aria-sort", "ascending")
    assert board_rows(page) == expected(by_parameters(descending=False))


def test_a_filter_lives_in_the_url_so_a_reload_shows_the_same_rows_and_choice(web: WebFixture, page: Page):
    small = [m for m in PUBLIC_MODELS if m.size == "small"]
    assert 0 < len(small) < len(PUBLIC_MODELS)  # the fixture must make the filter change something
    page.goto(BOARD)
    page.get_by_label("Size", exact=True).select_option("small")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"[?&]size=small(&|$)"))
    assert board_rows(page) == expected(small)
    expect(page.locator("#board-status")).to_contain_text(f"Showing {len(small)} of {len(PUBLIC_MODELS)} models")

    page.reload()
    assert board_rows(page) == expected(small)
    expect(page.get_by_label("Size", exact=True)).to_have_value("small")


def test_pinned_models_open_side_by_side_on_the_compare_page_with_a_chart_and_verdicts(web: WebFixture, page: Page):
    page.goto(BOARD)
    expect(page.get_by_role("link", name="Compare pinned models")).to_have_count(0)
    page.get_by_role("link", name="Pin Cedar-BERT").click()
    page.wait_for_url(re.compile(r"pins=cedar-bert"))
    page.get_by_role("link", name="Pin Dogwood-BERT").click()
    page.wait_for_url(re.compile(r"pins=cedar-bert%2Cdogwood-bert|pins=cedar-bert,dogwood-bert"))
    page.get_by_role("link", name="Pin Alder-BERT").click()
    page.wait_for_url(re.compile(r"alder-bert"))
    assert [name for _, name in board_rows(page)][:3] == ["Alder-BERT", "Cedar-BERT", "Dogwood-BERT"]  # pinned first

    page.get_by_role("link", name="Compare pinned models").click()
    page.wait_for_url(re.compile(r"/compare/\?"))
    expect(page.locator(CHART)).to_be_visible()
    table = page.locator("table", has=page.locator("#compare-caption"))
    columns = table.locator("thead th").all_inner_texts()
    assert [c.strip() for c in columns][:2] == ["Dataset", "Cedar-BERT"]
    entries = web.benchmark.entries.count()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(1 + entries)  # the benchmark score, then one row per dataset
    # Cedar-BERT is the reference: Dogwood-BERT (two examples swapped) cannot be told apart from it on
    # any dataset, Alder-BERT (right on a strict superset of its examples) is better on every one.
    verdicts = rows.locator("td.diff .verdict").all_inner_texts()
    assert verdicts == ["tie", "better"] * entries


def test_a_models_name_opens_its_page_with_the_pretraining_loss_curve_and_the_seed_plot(web: WebFixture, page: Page):
    printed: list[str] = []  # a script or style the Content-Security-Policy refused is reported on the console
    page.on("console", lambda message: printed.append(message.text))
    page.goto(BOARD)
    page.get_by_role("link", name="Alder-BERT", exact=True).click()
    page.wait_for_url("**/models/papers/alder-bert/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Alder-BERT")
    loss = page.locator("figure", has_text=re.compile("loss", re.I)).locator(CHART)
    seeds = page.locator("figure", has_text=re.compile("seed", re.I)).locator(CHART)
    expect(loss).to_be_visible()
    expect(seeds).to_be_visible()
    assert "script-src 'self'" in page.request.get(page.url).headers["content-security-policy"]
    assert not [line for line in printed if "Content Security Policy" in line], printed  # plotly draws under it


def test_the_csv_download_holds_exactly_the_rows_on_screen(web: WebFixture, page: Page):
    page.goto(f"{BOARD}?sort=parameters")  # a view other than the default: the CSV must follow it
    on_screen = board_rows(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    assert download.value.suggested_filename == "blurb-mini-leaderboard.csv"
    lines = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    tie = {"true": "=", "false": ""}  # the CSV's tied column is true/false (a bare "=" would start a formula)
    in_csv = [(f"{tie[line['tied']]}{line['rank']}" if line["rank"] else "unranked", line["name"]) for line in lines]
    assert in_csv == on_screen == expected(by_parameters(descending=True))


def test_a_citable_snapshot_opens_from_the_leaderboard_with_its_frozen_ranks(web: WebFixture, page: Page):
    page.goto(BOARD)
    snapshots = page.locator("section", has=page.get_by_role("heading", name="Citable snapshots"))
    snapshots.get_by_role("link", name=re.compile(SNAPSHOT_DATE.isoformat())).click()
    permalink = f"{BOARD}{SNAPSHOT_DATE.isoformat()}/"
    page.wait_for_url(f"**{permalink}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(SNAPSHOT_DATE.isoformat())
    frozen = page.locator("table.board tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[0].textContent.trim(), r.querySelector('th').firstChild.textContent.trim()])"
    )
    assert [tuple(row) for row in frozen] == expected(PUBLIC_MODELS)
    expect(page.get_by_label("BibTeX")).to_contain_text(permalink)


def _everything_a_reader_can_get(context: BrowserContext, web: WebFixture) -> dict[str, str]:
    """Each reader-facing surface of the board as the server sends it to this profile (its cookies)."""
    private = web.private
    surfaces = {
        "index": "/",
        "leaderboard": BOARD,
        "leaderboard, per-dataset columns": f"{BOARD}?datasets=1",
        "search": f"{BOARD}?q={private.name.split()[0]}",
        "csv export": f"{BOARD}export.csv",
        "json export": f"{BOARD}export.json",
        "snapshot": f"{BOARD}{SNAPSHOT_DATE.isoformat()}/",
        "compare": f"/compare/?benchmark=blurb-mini&models={private.slug},alder-bert",
    }
    seen = {}
    for surface, path in surfaces.items():
        response = context.request.get(path)
        assert response.status == 200, f"{path}: {response.status}"
        seen[surface] = response.text()
    return seen


def index_count(page: Page, web: WebFixture) -> str:
    """The index's "Models" count for the benchmark, as printed."""
    page.goto("/")
    row = page.locator("tbody tr", has=page.get_by_role("link", name=web.benchmark.name))
    return row.locator("td").nth(1).inner_text()


def test_a_private_model_appears_nowhere_for_an_anonymous_visitor_but_everywhere_for_its_owner(
    web: WebFixture, browser, live_site, context: BrowserContext, page: Page
):
    private = web.private
    assert index_count(page, web) == str(len(PUBLIC_MODELS))
    page.goto(f"{BOARD}?datasets=1")  # rendered, charts drawn: what the screenshot shows
    expect(page.locator("main")).not_to_contain_text(private.name)
    anonymous = _everything_a_reader_can_get(context, web)
    for surface, text in anonymous.items():
        assert private.name not in text, surface
        assert private.slug not in text or surface == "compare", surface  # compare echoes the slugs asked for
    assert f"Not found: {private.slug}" in anonymous["compare"]
    assert "No model matches these filters" in anonymous["search"]

    # The same surfaces show it to its owner: the checks above look where the model would be.
    owner = browser.new_context(base_url=live_site.url)
    try:
        sign_in(owner, live_site)
        owners = _everything_a_reader_can_get(owner, web)
        assert index_count(owner.new_page(), web) == str(len(PUBLIC_MODELS) + 1)
    finally:
        owner.close()
    assert private.name not in owners.pop("snapshot")  # a snapshot is the public board, whoever looks
    for surface, text in owners.items():
        if surface != "index":
            assert private.name in text, f"its owner does not see their model on the {surface}"


def test_a_private_models_page_is_a_404_for_an_anonymous_visitor_and_shown_to_its_owner(
    web: WebFixture, browser, live_site, page: Page
):
    path = f"/models/{web.owner.username}/{web.private.slug}/"  # its address: its owner's username, its name
    response = page.goto(path)
    assert response is not None and response.status == 404
    expect(page.locator("body")).not_to_contain_text(web.private.name)

    owner = browser.new_context(base_url=live_site.url)
    try:
        sign_in(owner, live_site)
        owners = owner.new_page()
        response = owners.goto(path)
        assert response is not None and response.status == 200, "the owner cannot open their own model's page"
        expect(owners.get_by_role("heading", level=1)).to_contain_text(web.private.name)
    finally:
        owner.close()


API = {
    "leaderboard": "/api/v1/benchmarks/blurb-mini/leaderboard",
    "models": "/api/v1/models/",
}


@pytest.mark.parametrize("route", API)
def test_the_public_api_lists_a_private_model_only_to_its_owner(
    web: WebFixture, browser, live_site, page: Page, route: str
):
    anonymous = page.request.get(API[route])
    assert web.private.name not in anonymous.text() and web.private.slug not in anonymous.text()

    owner = browser.new_context(base_url=live_site.url)
    try:
        sign_in(owner, live_site)
        owners = owner.request.get(API[route])
        owners_status, owners_text = owners.status, owners.text()
    finally:
        owner.close()
    if anonymous.status == 404 and owners_status == 404:
        pytest.skip(f"{API[route]} is not served yet (404 for everyone): only its absence of a leak is checked")
    assert anonymous.status == 200, API[route]
    listed = json.dumps(json.loads(anonymous.text()))  # JSON, and the public models are where it would be
    assert all(m.name in listed for m in PUBLIC_MODELS), listed[:500]
    assert owners_status == 200 and web.private.name in owners_text


def test_on_a_phone_the_leaderboard_scrolls_only_inside_its_table_and_the_search_works(
    web: WebFixture, browser, live_site, screenshot_path
):
    phone = browser.new_context(
        base_url=live_site.url,
        viewport={"width": 375, "height": 812},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    try:
        page = phone.new_page()
        page.goto(BOARD)
        page.wait_for_function(CHARTS_DRAWN)  # a chart wider than the phone would overflow too
        overflow = "() => document.documentElement.scrollWidth"
        assert page.evaluate(overflow) <= 375 + 1, "the page scrolls sideways on a 375-pixel phone"
        # the board folds to rank, model and score on a phone (each row's other columns behind a tap), so it
        # fits; the per-dataset columns make it wider than the phone, and then it scrolls in its own region
        wrap = page.locator(".table-wrap", has=page.locator("table.board"))
        assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth")
        page.goto(f"{BOARD}?datasets=1")
        assert page.evaluate(overflow) <= 375 + 1, "the per-dataset columns widen the page on a phone"
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth")
        page.goto(BOARD)

        search = page.get_by_label("Model name")
        expect(search).to_be_in_viewport()
        search.fill("Cedar")
        search.press("Enter")
        page.wait_for_url(re.compile(r"[?&]q=Cedar"))
        assert board_rows(page) == [("3", "Cedar-BERT")]
        assert page.evaluate(overflow) <= 375 + 1
        page.screenshot(path=str(screenshot_path), full_page=True)
    finally:
        phone.close()


A11Y_PAGES = {
    "index": "/",
    "leaderboard": f"{BOARD}?datasets=1&pins=alder-bert",
    "compare": "/compare/?benchmark=blurb-mini&models=alder-bert,cedar-bert",
    "snapshot": f"{BOARD}{SNAPSHOT_DATE.isoformat()}/",
    "model": "/models/papers/alder-bert/",
    "datasets": "/datasets/",
    "dataset": "/datasets/demo-ner/",
}

# Every heading level 1, every table's caption, every form control's label: what a screen reader
# announces first, and what the pages promise (templates/base.html, _chart.html).
A11Y_PROBLEMS = """() => {
    const problems = [];
    const h1 = document.querySelectorAll('h1').length;
    if (h1 !== 1) problems.push(`${h1} h1 elements`);
    document.querySelectorAll('table').forEach((table, i) => {
        const caption = table.querySelector(':scope > caption');
        if (!caption || !caption.textContent.trim()) problems.push(`table ${i} has no caption`);
    });
    const controls = 'input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=reset]), '
        + 'select, textarea';
    document.querySelectorAll(controls).forEach(control => {
        const named = control.labels.length > 0 || control.getAttribute('aria-label')
            || control.getAttribute('aria-labelledby');
        if (!named) problems.push(`${control.outerHTML.slice(0, 80)} has no label`);
    });
    return problems;
}"""


@pytest.mark.parametrize("name", A11Y_PAGES)
def test_every_page_has_one_h1_captioned_tables_and_labelled_controls(web: WebFixture, page: Page, name: str):
    response = page.goto(A11Y_PAGES[name])
    assert response is not None and response.status == 200, f"{A11Y_PAGES[name]}: {response and response.status}"
    page.wait_for_function(CHARTS_DRAWN)  # plotly adds elements of its own: they are checked too
    assert page.evaluate(A11Y_PROBLEMS) == []
