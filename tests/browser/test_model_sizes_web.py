"""Sizes for every model (issue 30, deliverable 2), as a reader finds them in Chromium: BLURB's size filter
keeps the BERT-base-sized models, its score-vs-size chart is drawn, and PubMedBERT's page says how big it
is and which paper says so. Screenshots in var/screenshots/ (tests/browser/conftest.py).
"""

from __future__ import annotations

import re

import pytest
from playwright_api import Page, expect
from web_fixture import WebFixture

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 800}


def test_blurbs_size_filter_50m_to_200m_keeps_the_14_bert_base_sized_models_and_draws_them_by_size(
    web: WebFixture, page: Page
):
    page.goto("/leaderboard/blurb/")
    page.get_by_label("Size", exact=True).select_option("base")
    apply = page.get_by_role("button", name="Apply")
    if apply.is_visible():  # filters may apply on change, with Apply kept for no-JS
        apply.click()
    page.wait_for_url(re.compile(r"[?&]size=base(&|$)"))
    rows = page.locator("table.board tbody tr")
    expect(rows).to_have_count(14)
    expect(page.locator("#board-status")).to_contain_text("Showing 14 of 15 models")
    names = rows.locator("th[scope=row] a").all_text_contents()
    assert "PubMedBERT" in names and "BioBERT-Base v1.1" in names and "RoBERTa (size not stated)" not in names
    expect(page.locator("#pareto-size.js-plotly-plot")).to_be_visible()


def test_pubmedberts_page_shows_its_size_and_the_paper_stating_it_on_a_phone(web: WebFixture, page: Page):
    from registry.models import LanguageModel

    pubmedbert = LanguageModel.objects.filter(origin="reported", name="PubMedBERT").order_by("pk").first()
    page.set_viewport_size(PHONE)
    page.goto(pubmedbert.get_absolute_url())
    size = page.locator("dt:text-is('Parameters') + dd")
    expect(size).to_contain_text("110,000,000 (110M, size 50M to 200M)")
    expect(size).to_contain_text("Source: Fang et al. 2023, Table 1 (PubMedBERT, 110M)")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
