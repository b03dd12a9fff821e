"""Per-class scores (issue 30, deliverable 4) as a reader meets them in Chromium, at 1,400 and 375 px.

A model of the board gets stored per-class figures on the relation set (relation types) and the
document set (HoC-style hallmarks, long names); its page and the relation set's page show them in
tables that fit a phone without sideways scroll. Screenshots of the section itself, for a person to
look at, in var/screenshots/per-class-*.png.
"""

from __future__ import annotations

import pytest
from browser_launch import SCREENSHOTS
from playwright_api import Page, expect
from web_fixture import WebFixture

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": {"width": 1400, "height": 900}, "phone": {"width": 375, "height": 800}}
RELATIONS = {
    "classes": [
        {"name": "CPR:3", "support": 16, "precision": 81.25, "recall": 76.4706, "f1": 78.7879},
        {"name": "CPR:4", "support": 14, "precision": 66.6667, "recall": 71.4286, "f1": 68.9655},
    ],
    "below_threshold": 1,
    "min_support": 10,
}
HALLMARKS = {
    "classes": [
        {"name": "resisting cell death", "support": 17, "precision": 88.2353, "recall": 88.2353, "f1": 88.2353},
        {"name": "genomic instability and mutation", "support": 15, "precision": 92.9, "recall": 86.7, "f1": 89.7},
        {"name": "activating invasion and metastasis", "support": 12, "precision": 100.0, "recall": 75.0, "f1": 85.7},
    ],
    "below_threshold": 1,
    "min_support": 10,
}


@pytest.fixture(scope="module")
def with_classes(live_site, django_db_blocker):
    """The first public model's results on the relation and document sets, with figures stored (committed:
    the server thread must see them), removed when the module ends."""
    from leaderboard.models import Result, ResultClasses

    model = live_site.web.models[live_site.web.public[0].slug]
    with django_db_blocker.unblock():
        results = {r.dataset.slug: r for r in Result.objects.filter(language_model=model, scope="")}
        made = [
            ResultClasses.objects.create(result=results["demo-relation"], figures=RELATIONS),
            ResultClasses.objects.create(result=results["demo-doc-classification"], figures=HALLMARKS),
        ]
    yield model
    with django_db_blocker.unblock():
        ResultClasses.objects.filter(pk__in=[row.pk for row in made]).delete()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_model_page_shows_scores_per_class_that_fit_the_screen(
    web: WebFixture, with_classes, page: Page, width: str
):
    page.set_viewport_size(WIDTHS[width])
    page.goto(with_classes.get_absolute_url())
    section = page.locator("section.per-class")
    expect(section.get_by_role("heading", name="Scores per class")).to_be_visible()
    relation = section.locator("details", has_text="CPR:3")
    expect(relation.locator("tbody tr")).to_have_count(2)
    expect(relation).to_contain_text("1 class with fewer than 10 gold examples in the test split is not shown")
    expect(section.locator("details", has_text="genomic instability").locator("tbody tr")).to_have_count(3)
    for table in section.locator("table").all():  # each table fits its column: nothing to scroll inside either
        assert table.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SCREENSHOTS / f"per-class-model-{WIDTHS[width]['width']}.png"))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_dataset_page_shows_each_visible_models_scores_per_class(
    web: WebFixture, with_classes, page: Page, width: str
):
    page.set_viewport_size(WIDTHS[width])
    page.goto("/datasets/demo-relation/")
    section = page.locator("section.per-class")
    details = section.locator("details", has_text=with_classes.name)
    expect(details.locator("tbody tr").first).to_contain_text("CPR:3")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SCREENSHOTS / f"per-class-dataset-{WIDTHS[width]['width']}.png"))


GENIA_TYPES = {  # JNLPBA: untyped predictions against the typed test gold, recall and support only
    "classes": [
        {"name": "protein", "support": 5067, "precision": None, "recall": 71.4286, "f1": None},
        {"name": "cell_type", "support": 1921, "precision": None, "recall": 68.25, "f1": None},
        {"name": "DNA", "support": 1056, "precision": None, "recall": 64.0, "f1": None},
    ],
    "below_threshold": 0,
    "min_support": 10,
}


@pytest.fixture(scope="module")
def on_jnlpba(live_site, django_db_blocker):
    """The first public model with a JNLPBA result whose per-type recall is stored, removed when the module ends."""
    from leaderboard.models import Result, ResultClasses
    from registry.models import Dataset

    model = live_site.web.models[live_site.web.public[0].slug]
    with django_db_blocker.unblock():
        dataset = Dataset.objects.get(slug="jnlpba")
        result = Result.objects.create(
            language_model=model, dataset=dataset, metric=dataset.metric, value=79.0, n_seeds=1, source="job"
        )
        ResultClasses.objects.create(result=result, figures=GENIA_TYPES)
    yield model
    with django_db_blocker.unblock():
        result.delete()


@pytest.mark.parametrize("width", WIDTHS)
def test_jnlpbas_page_shows_each_genia_types_recall_with_no_precision_and_fits(
    web: WebFixture, on_jnlpba, page: Page, width: str
):
    page.set_viewport_size(WIDTHS[width])
    page.goto("/datasets/jnlpba/")
    section = page.locator("section.per-class")
    details = section.locator("details", has_text=on_jnlpba.name)
    expect(details).to_contain_text("predicts untyped spans")
    expect(details.locator("tbody tr").first).to_contain_text("protein")
    expect(details.locator("tbody tr").first).to_contain_text("71.4")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SCREENSHOTS / f"per-class-jnlpba-{WIDTHS[width]['width']}.png"))
