"""One model, many sources (issue 30, deliverable 1), as a reader meets it in Chromium: BioBERT-Base v1.1 is
one page listing the three papers that report it, each value on a shared dataset beside its table, and its
other versions; an old per-paper address lands there. At 1,400 and 375 px, with no sideways scroll.
Screenshots in var/screenshots/ (tests/browser/conftest.py).
"""

from __future__ import annotations

import pytest
from playwright_api import Page, expect
from web_fixture import WebFixture

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": {"width": 1400, "height": 900}, "phone": {"width": 375, "height": 800}}
BIOBERT = "/models/dmis-lab/biobert-v1.1/"


@pytest.mark.parametrize("width", WIDTHS)
def test_biobert_is_one_page_with_every_papers_numbers_and_its_versions(
    web: WebFixture, page: Page, width: str, screenshot_path
):
    page.set_viewport_size(WIDTHS[width])
    page.goto("/models/papers/blurb--biobert/")  # the address BLURB's row had before: a snapshot may link it
    assert page.url.endswith(BIOBERT)
    expect(page.get_by_role("heading", level=1)).to_have_text("BioBERT-Base v1.1")
    sources = page.locator("ul.sources > li")
    expect(sources).to_have_count(3)
    for benchmark in ("BLURB", "Bioformer", "Lewis"):
        expect(sources.filter(has_text=benchmark)).to_have_count(1)
    shared = page.locator("table", has=page.locator("caption", has_text="Datasets that more than one paper reports"))
    chem = shared.locator("tbody tr", has_text="BC5-chem")
    expect(chem.locator("li")).to_have_count(3)
    expect(chem).to_contain_text("92.85")
    expect(chem).to_contain_text("Gu et al. 2021")
    page.locator("#versions ~ ul.versions").get_by_role("link", name="BioBERT-Large v1.1").click()
    page.wait_for_url("**/models/dmis-lab/biobert-large-cased-v1.1/")
    expect(page.locator("ul.versions")).to_contain_text("this model is a version of it")
    page.goto(BIOBERT)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for section in ("sources", "shared-datasets"):  # as a reader scrolls to them
        page.locator(f"#{section}").scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot_path.with_name(f"{screenshot_path.stem}-{section}.png")))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_bc5_chem_page_lists_biobert_once_with_each_papers_value(
    web: WebFixture, page: Page, width: str, screenshot_path
):
    page.set_viewport_size(WIDTHS[width])
    page.goto("/datasets/bc5-chem/")
    links = page.locator(f'table a[href="{BIOBERT}"]')
    expect(links).to_have_count(1)
    group = page.locator("tbody", has=page.locator(f'a[href="{BIOBERT}"]'))
    expect(group.locator("tr")).to_have_count(3)
    for value in ("92.85", "91.90"):
        expect(group).to_contain_text(value)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    group.scroll_into_view_if_needed()  # BioBERT's three values, as a reader reaches them
    page.screenshot(path=str(screenshot_path.with_name(f"{screenshot_path.stem}-biobert.png")))
