"""A two-node pretraining job's submission page says where each rank ran, readable on a laptop and on a phone.

The report is the one the engine writes (``provenance.ranks``: rank, host, local rank, node rank), stored on the
fixture's pretrained model (Alder-BERT) as a finished job leaves it; the real two-node run that writes it is
tests/test_slurm_platform.py's. Screenshots: var/screenshots/pretraining-ranks-1280.png and -375.png.
"""

from __future__ import annotations

import pytest
from browser_launch import SCREENSHOTS

pytestmark = pytest.mark.browser
PHONE = {"width": 375, "height": 800}
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
RANKS = [{"rank": 1, "host": "n2", "local_rank": 0, "node_rank": 1}, {"rank": 0, "host": "n1", "local_rank": 0,
                                                                        "node_rank": 0}]  # fmt: skip


@pytest.fixture(scope="module")
def two_node_submission(live_site, django_db_blocker):
    """A finished submission of the fixture's pretrained model, its report saying it ran on n1 and n2."""
    from submissions.models import Submission

    model = live_site.web.models["alder-bert"]
    with django_db_blocker.unblock():
        report = {**model.pretraining, "provenance": {"processes": 2, "ranks": RANKS}}
        type(model).objects.filter(pk=model.pk).update(pretraining=report)
        submission = Submission.objects.create(submitter=live_site.web.owner, language_model=model)
    yield submission
    with django_db_blocker.unblock():
        submission.delete()
        type(model).objects.filter(pk=model.pk).update(pretraining=model.pretraining)


def test_a_two_node_jobs_page_lists_each_ranks_host_and_fits_a_phone(web, page, two_node_submission):
    page.goto(f"/submissions/{two_node_submission.pk}/")
    table = page.locator("table.ranks")
    assert page.get_by_role("heading", name="Where the pretraining ran").is_visible()
    rows = [[cell.inner_text() for cell in row.locator("th, td").all()] for row in table.locator("tbody tr").all()]
    assert rows == [["0", "n1", "0", "0"], ["1", "n2", "1", "0"]]
    assert [h.inner_text() for h in table.locator("thead th").all()] == ["Rank", "Host", "Node rank", "Local rank"]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "pretraining-ranks-1280.png"), full_page=True)
    assert page.evaluate(SIDEWAYS) <= 0
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(SCREENSHOTS / "pretraining-ranks-375.png"), full_page=True)
    assert page.evaluate(SIDEWAYS) <= 0, "the ranks table widens the page on a phone"
    assert table.is_visible()
