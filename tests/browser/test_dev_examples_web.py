"""The dev-example viewer in a real Chromium, at a desktop's and a phone's width, axe-core clean.

A reader opens a result's dev examples from the model page, narrows them to the errors, searches, and
pages; a NER example shows its gold and predicted entities marked, a relation example its entity pair.
Each width leaves a screenshot in var/screenshots/.
"""

from __future__ import annotations

import json
import re

import pytest
from axe import axe_context_options, describe, serious_violations
from browser_launch import save_full_page
from playwright_api import expect

pytestmark = pytest.mark.browser
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="module")
def viewed(live_site, django_db_blocker):
    """A public model with a NER and a relation result whose dev predictions are half wrong; removed at the end."""
    from test_model_pages import reproduced

    from jobs import artefacts, exports
    from registry.models import Dataset, LanguageModel

    with django_db_blocker.unblock():
        model = LanguageModel.objects.create(slug="viewer-bert", name="Viewer BERT", namespace="papers",
                                             address_name="viewer-bert")  # fmt: skip
        results = {}
        for slug in ("demo-ner", "demo-relation"):
            dataset = Dataset.objects.get(slug=slug)
            prefix, _ = exports.dataset_artefacts(dataset)
            with artefacts.storage().open(f"{prefix}/dev.jsonl", "rb") as handle:
                dev = [json.loads(line) for line in handle.read().decode().splitlines() if line.strip()]
            if slug == "demo-ner":
                predicted = [["O"] * len(row["tags"]) if i % 2 else row["tags"] for i, row in enumerate(dev)]
            else:
                labels = sorted({row["label"] for row in dev})
                predicted = [row["label"] if i % 2 else labels[(labels.index(row["label"]) + 1) % len(labels)]
                             for i, row in enumerate(dev)]  # fmt: skip
            results[slug] = reproduced(model, dataset, [70.0, 72.0], dev_predictions={"42": predicted, "43": predicted})
        try:
            yield model, results
        finally:
            model.results.all().delete()
            model.jobs.all().delete()
            model.delete()


@pytest.mark.parametrize("width", [1400, 375])
def test_a_reader_opens_the_dev_examples_narrows_them_to_the_errors_and_reads_the_entities(
    web, browser, live_site, viewed, screenshot_path, width: int
):
    model, results = viewed
    context = browser.new_context(base_url=live_site.url, viewport={"width": width, "height": 900},
                                  is_mobile=width == 375, **axe_context_options())  # fmt: skip
    page = context.new_page()
    try:
        page.goto(model.get_absolute_url())
        page.locator(f'a.dev-examples[href*="/dev-examples/{results["demo-ner"].pk}/"]').first.click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Dev examples of Viewer BERT on Demo NER")
        expect(page.locator("#example-count")).to_contain_text("wrong")
        page.get_by_label("Only the errors").check()
        page.get_by_role("button", name="Show").click()
        expect(page).to_have_url(re.compile(r"errors=1"))
        wrong = page.locator("li.example.wrong")
        expect(wrong.first).to_be_visible()
        assert page.locator("li.example.right").count() == 0
        expect(wrong.first.locator("mark.gold").first).to_be_visible()
        _clean(page)
        save_full_page(page, screenshot_path.with_name(f"{screenshot_path.stem}-ner{screenshot_path.suffix}"))

        page.goto(f"{model.get_absolute_url()}dev-examples/{results['demo-relation'].pk}/")
        first = page.locator("li.example").first
        expect(first).to_contain_text("Entity pair:")
        expect(first).to_contain_text("Gold")
        expect(first).to_contain_text("Predicted")
        identifier = first.locator("code").first.inner_text()
        page.get_by_label("Search").fill(identifier)
        page.get_by_label("Search").press("Enter")
        expect(page.locator("li.example")).to_have_count(1)
        _clean(page)
    finally:
        save_full_page(page, screenshot_path)
        context.close()


def _clean(page) -> None:
    violations = serious_violations(page)
    assert not violations, describe(violations)
    assert page.evaluate(SIDEWAYS) <= 0
