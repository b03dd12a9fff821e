"""A reader finds how long an evaluation takes on a benchmark, and what it costs, in a real browser, on a phone.

Five public full-protocol submissions to BLURB-mini were published 1, 2, 3, 4 and 10 hours after they
were sent, each having held a GPU for 2 to 6 hours; one quick preview took half an hour. The page's
"Time to the leaderboard" says so in words a person reads, on a phone without scrolling sideways, and
passes axe's serious checks. The screenshots are var/screenshots/<test name>.png and, of the section
alone, <test name>-section.png.
"""

from __future__ import annotations

import datetime as dt

import pytest
from axe import axe_context_options, describe, serious_violations
from browser_launch import save_full_page
from playwright_api import expect

pytestmark = pytest.mark.browser

BOARD = "/leaderboard/blurb-mini/"
PHONE = {"width": 375, "height": 812}


@pytest.fixture(scope="module", autouse=True)
def published(live_site, django_db_blocker):
    """The six submissions, committed for the live server's thread to read; removed after the module."""
    from django.utils import timezone

    from jobs.models import Attempt, Job
    from registry.models import Benchmark, LanguageModel
    from submissions.models import Submission

    with django_db_blocker.unblock():
        blurb_mini = Benchmark.objects.get(slug="blurb-mini")
        entry = blurb_mini.entries.select_related("dataset").order_by("position").first()
        owner = live_site.web.owner
        submitted = timezone.now() - dt.timedelta(days=2)
        made = []
        for index, (hours, gpu_hours, preview) in enumerate(
            [(1, 2.0, False), (2, 3.0, False), (3, 4.0, False), (4, 5.0, False), (10, 6.0, False), (0.5, 0.25, True)]
        ):
            model = LanguageModel.objects.create(slug=f"turnaround-{index}", name=f"Turnaround {index}", owner=owner)
            submission = Submission.objects.create(submitter=owner, language_model=model, preview=preview)
            Submission.objects.filter(pk=submission.pk).update(created_at=submitted)
            job = Job.objects.create(
                language_model=model, dataset=entry.dataset, benchmark=blurb_mini, submission=submission,
                kind=Job.Kind.FINETUNE, status=Job.Status.SUCCEEDED, finished_at=submitted + dt.timedelta(hours=hours),
            )  # fmt: skip
            Attempt.objects.create(
                job=job, number=1, delivery="d1", worker="gpu0@host", gpus=1.0, gpu_model="NVIDIA H200",
                started_at=submitted, ended_at=submitted + dt.timedelta(hours=gpu_hours),
                gpu_seconds=gpu_hours * 3600,
            )  # fmt: skip
            made.append(model.pk)
    yield
    with django_db_blocker.unblock():
        LanguageModel.objects.filter(pk__in=made).delete()


def test_a_reader_on_a_phone_reads_the_time_to_the_leaderboard_and_the_gpu_hours_it_took(
    web, browser, live_site, screenshot_path
):
    phone = browser.new_context(base_url=live_site.url, viewport=PHONE, is_mobile=True, has_touch=True,
                                **axe_context_options())  # fmt: skip
    page = phone.new_page()
    try:
        page.goto(BOARD)
        section = page.get_by_role("region", name="Time to the leaderboard")
        section.scroll_into_view_if_needed()
        expect(section).to_contain_text("over the 5 full-protocol submissions of public models")
        expect(section).to_contain_text("median 3 h 0 min, 90th percentile 10 h 0 min")
        expect(section).to_contain_text("a median of 4.00 GPU-hours")
        expect(section).to_contain_text("Quick previews, counted apart (1): median 30 min")
        box = section.bounding_box()
        assert box is not None and box["x"] + box["width"] <= PHONE["width"], box
        violations = serious_violations(page)
        assert not violations, describe(violations)
        section.screenshot(path=str(screenshot_path.with_name(screenshot_path.stem + "-section.png")))
    finally:
        save_full_page(page, screenshot_path)
        phone.close()
