"""The staff side and the queues' names, in a real browser on tests/browser/conftest.py's live site.

``manage.py demo``'s staff account (made here by the function the demo calls) signs in at the site's
sign-in, to which the admin sends, and opens the admin job queue. On a site whose training worker
runs on the CPU, as ``make demo``'s does on a laptop, the public queue page and a submission's page
name the queues by what they do ("training", "scoring") and never say "gpu". Each test leaves its
screenshots in var/screenshots/ (the page at 1280 px, and at 375 px where a phone reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from browser_launch import DESKTOP, SCREENSHOTS, TIMEOUT_MS
from playwright_api import Page, expect

pytestmark = pytest.mark.browser  # each test takes ``web`` for its ``db``: see tests/browser/conftest.py

ADMIN_QUEUE = "/admin/jobs/job/"
PHONE = {"width": 375, "height": 800}


@dataclass(frozen=True)
class Staffed:
    submission_url: str
    signed_in_through: list[str]  # the URLs the sign-in went through, from the admin queue back to it
    cookies: list  # the staff session, for the tests' browser profiles


@pytest.fixture(scope="module")
def staffed(browser, live_site, django_db_blocker) -> Iterator[Staffed]:
    """The demo's staff account signed in through the site's sign-in, once; a submission of one of the board's
    models with one fine-tuning job waiting; and the demo's two workers on a laptop, the training one on the CPU,
    live for the module (their heartbeats count for an hour here). Committed, for the live server, and removed when
    the module ends.

    The sign-in happens here, outside any test's transaction: on SQLite the live server shares the tests'
    in-memory database, and a sign-in (a new session row) from a test holding its transaction open is refused
    ("database table is locked").
    """
    from contract_documents import finetune_spec
    from django.contrib.auth import get_user_model
    from django.test import override_settings

    from jobs import dispatch
    from jobs.models import Job, Worker
    from registry.models import Dataset
    from submissions.management.commands.demo import STAFF_USER, staff_account
    from submissions.models import Submission

    with django_db_blocker.unblock():
        dispatch.record_worker("trainer0@laptop", ["gpu"], gpus=0)
        dispatch.record_worker("cpu@laptop", ["cpu"])
        password = staff_account()
        model = live_site.web.models[live_site.web.public[0].slug]
        submission = Submission.objects.create(submitter=live_site.web.owner, language_model=model)
        submission.benchmarks.add(live_site.web.benchmark)
        Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                           benchmark=live_site.web.benchmark, kind=Job.Kind.FINETUNE, queue=Job.Queue.GPU,
                           spec=finetune_spec("demo-ner").to_json())  # fmt: skip
    try:
        with override_settings(BIOLM_HEARTBEAT_STALE_S=3600), django_db_blocker.unblock():
            through, cookies = _sign_in(browser, live_site.url, STAFF_USER, password)
            yield Staffed(f"/submissions/{submission.pk}/", through, cookies)
    finally:
        with django_db_blocker.unblock():
            submission.delete()
            Worker.objects.filter(name__endswith="@laptop").delete()
            get_user_model().objects.filter(username=STAFF_USER).delete()


def _sign_in(browser, site: str, user: str, password: str) -> tuple[list[str], list]:
    """Open the admin job queue, be sent to the site's sign-in, sign in there: the URLs seen, and the cookies."""
    context = browser.new_context(viewport=DESKTOP, base_url=site)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    seen: list[str] = []
    page.on(
        "framenavigated", lambda frame: seen.append(frame.url.removeprefix(site)) if frame == page.main_frame else 0
    )
    page.goto(ADMIN_QUEUE)
    page.get_by_label("Username or e-mail address").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(re.escape(ADMIN_QUEUE) + "$"))
    cookies = context.cookies()
    context.close()
    return seen, cookies


def shots(page: Page, name: str) -> None:
    """var/screenshots/<name>-1280.png and <name>-375.png: the page on a laptop and on a phone."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-1280.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-375.png"), full_page=True)


def test_the_demos_staff_account_signs_in_at_the_sites_sign_in_and_opens_the_admin_job_queue(
    web, page: Page, staffed: Staffed
):
    assert staffed.signed_in_through[0] == f"/accounts/login/?next={ADMIN_QUEUE}"  # /admin/login/ sent it here
    assert staffed.signed_in_through[-1] == ADMIN_QUEUE
    page.context.add_cookies(staffed.cookies)
    page.goto(ADMIN_QUEUE)

    overview = page.locator("#job-queue-overview")
    expect(overview).to_contain_text("training (gpu)")
    expect(overview).to_contain_text("trainer0@laptop")
    expect(page.locator("#result_list")).to_contain_text("waiting for a free training worker")
    expect(page.locator("h1")).to_contain_text("job")
    shots(page, "admin-job-queue")


def test_on_a_cpu_only_site_the_queue_page_names_training_and_scoring_queues_and_never_gpu(
    web, page: Page, staffed: Staffed
):
    page.goto("/queue/")

    expect(page.locator(".queue-health").filter(has_text="Training queue")).to_contain_text("1 live worker")
    expect(page.locator(".queue-health").filter(has_text="Scoring queue")).to_contain_text("1 live worker")
    expect(page.locator("tr.worker").filter(has_text="trainer0@laptop")).to_contain_text("CPU")
    assert "gpu" not in page.locator("main").inner_text().lower()
    shots(page, "queue-page-cpu-only-site")


def test_a_waiting_job_on_the_submission_page_waits_for_a_training_worker_not_a_gpu_one(
    web, page: Page, staffed: Staffed
):
    page.context.add_cookies(staffed.cookies)  # staff may read every submission
    page.goto(staffed.submission_url)

    place = page.locator('[data-field="place"]').first
    expect(place).to_contain_text("#1 in the training queue")
    expect(page.locator('[data-field="waiting_reason"]').first).to_have_text("waiting for a free training worker")
    with page.expect_response(re.compile(r"status\.json")):  # the page's own refresh keeps the words
        pass
    expect(place).to_contain_text("#1 in the training queue")
    assert "gpu" not in page.locator("main").inner_text().lower()
    shots(page, "submission-page-cpu-only-site")


@pytest.fixture(scope="module")
def held_result(staffed, live_site, django_db_blocker):
    """A result on demo-ner, marked restricted and held by mayo, awaiting approval; committed before the test's
    transaction opens (as ``staffed`` is, for SQLite's shared database), removed after."""
    from leaderboard.models import Result
    from registry.holders import add_holder
    from registry.models import DataHolder, Dataset, LanguageModel, Metric

    with django_db_blocker.unblock():
        Dataset.objects.filter(slug="demo-ner").update(access=Dataset.Access.RESTRICTED)
        holder, _ = add_holder("mayo", "Mayo Clinic")
        Dataset.objects.filter(slug="demo-ner").update(held_by=holder)  # the queued job above stays where it is
        model = LanguageModel.objects.create(slug="held-model", name="Held model", owner=live_site.web.owner)
        result = Result.everything.create(
            language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
            metric=Metric.objects.get(slug="entity-f1"), value=81.25, std=1.0, n_seeds=5,
            approval=Result.Approval.PENDING,
        )  # fmt: skip
    try:
        yield result
    finally:
        with django_db_blocker.unblock():
            model.delete()
            Dataset.objects.filter(slug="demo-ner").update(access=Dataset.Access.PUBLIC, held_by=None)
            DataHolder.objects.filter(name="mayo").delete()


def test_an_approver_rejects_a_held_result_only_with_a_reason_and_approves_it_in_the_admin(
    web, page: Page, staffed: Staffed, held_result
):
    page.context.add_cookies(staffed.cookies)  # the demo's staff account is a superuser: it may decide on any
    page.goto("/admin/leaderboard/heldresult/")
    expect(page.locator("#result_list")).to_contain_text("Held model")
    expect(page.locator("#result_list")).to_contain_text("awaiting the data holder's approval")
    page.locator("#result_list a", has_text="Held model").first.click()
    expect(page.locator("main, #content").first).to_contain_text("81.25")
    page.get_by_label("reject: keep it off").check()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errorlist")).to_contain_text("Say why it is rejected")
    shots(page, "admin-held-result-reject-without-reason")
    page.set_viewport_size(DESKTOP)
    page.get_by_label("approve: publish it").check()
    page.get_by_label("Approval reason").fill("checked against the data use agreement")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#result_list")).to_contain_text("Approved")
    assert page.locator("#result_list tbody tr").count() == 1  # the board's older, public results are not asked about
    shots(page, "admin-held-results-approved")
