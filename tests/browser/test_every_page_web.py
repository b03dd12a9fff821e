"""Every page type of the site at 1,400 and 375 px, signed in and out: no sideways scroll, and no serious
or critical WCAG 2.1 A/AA violation by axe-core (issue 30, deliverable 11).

The board is tests/browser/conftest.py's (tests/web_fixture.py), with a submission of alice's (one job
waiting) for the submission page, an API token of hers for the profile's tokens, a live training
worker for the queue page's tables, and a staff account for the admin's job queue, all made for this
module. Each page
is visited by the readers who see it differently: anonymously, and signed in as alice (the header,
her private model on the board and the compare page's suggestions, the submit form, her profile);
the admin's job queue by staff. Pages that look the same to everyone are visited once.

For each visit the test saves var/screenshots/<page>-<width>.png (for a person to look at: layout,
contrast, wrapping), then asserts that the page does not scroll sideways
(``document.documentElement.scrollWidth <= innerWidth``, naming the elements that stick out) and that
axe-core (tests/browser/axe.py: the pinned axe.min.js, injected with the CSP bypassed) finds no serious
or critical violation of the WCAG 2.1 A and AA rules (tags wcag2a, wcag2aa, wcag21a, wcag21aa), naming
the rule and the element. A page's own tests check its content; this one only that every page stays
usable on a phone and by a screen reader.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from axe import axe_context_options, axe_source, describe, serious_violations
from browser_launch import SCREENSHOTS, TIMEOUT_MS
from web_fixture import SNAPSHOT_DATE

pytestmark = pytest.mark.browser

WIDTHS = {1400: {"width": 1400, "height": 900}, 375: {"width": 375, "height": 812}}
ANONYMOUS, ALICE, STAFF = "signed-out", "signed-in", "staff"
# Every chart of the page drawn (charts.js draws them once plotly.js has loaded); a page without charts at once.
CHARTS_DRAWN = "() => [...document.querySelectorAll('div.chart[data-figure]')].every(d => d.matches('.js-plotly-plot'))"
# The elements that stick out to the right of the viewport and are not inside a box that scrolls or clips them
# (a wide table in its .table-wrap is fine): what makes a page scroll sideways, for the failure message.
STICKING_OUT = """() => {
    const width = window.innerWidth;
    const clipped = el => {
        for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
            if (getComputedStyle(up).overflowX !== 'visible') return true;
        }
        return false;
    };
    const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
        + (el.classList.length ? '.' + [...el.classList].join('.') : '');
    const out = [...document.body.querySelectorAll('*')].filter(el => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.right > width + 1 && !clipped(el);
    });
    // the outermost ones: a child sticking out with its parent says nothing new
    return out.filter(el => !out.includes(el.parentElement)).slice(0, 8)
        .map(el => `${name(el)} (right edge ${Math.round(el.getBoundingClientRect().right)} px)`);
}"""


@dataclass(frozen=True)
class Visit:
    page: str  # the screenshot's name
    path: str
    audience: str  # ANONYMOUS, ALICE or STAFF
    status: int = 200
    ready: str = ""  # a selector to wait for: what a page drawn by its own script shows once drawn


def visits() -> list[Visit]:
    """Each page type with the audiences it differs for; the how-ranks page where the site has one."""
    from django.urls import NoReverseMatch, reverse

    board = "/leaderboard/blurb-mini/"
    listed = [
        Visit("home", "/", ANONYMOUS),
        Visit("home-signed-in", "/", ALICE),
        Visit("benchmark", board, ANONYMOUS),
        Visit("benchmark-signed-in", board, ALICE),
        Visit("benchmark-datasets", f"{board}?datasets=1", ANONYMOUS),
        Visit("datasets", "/datasets/", ANONYMOUS),
        Visit("dataset", "/datasets/demo-ner/", ANONYMOUS),
        Visit("model", "/models/papers/alder-bert/", ANONYMOUS),
        Visit("compare", "/compare/?benchmark=blurb-mini&models=alder-bert,cedar-bert,dogwood-bert", ANONYMOUS),
        Visit("compare-signed-in", "/compare/?benchmark=blurb-mini&models=alder-bert,cedar-bert", ALICE),
        Visit("snapshot", f"{board}{SNAPSHOT_DATE.isoformat()}/", ANONYMOUS),
        Visit("submit", "/submit/", ALICE),
        Visit("submission", "SUBMISSION", ALICE),  # made by the module's fixture
        Visit("queue", "/queue/", ANONYMOUS),
        Visit("queue-signed-in", "/queue/", ALICE),
        Visit("profile", "/accounts/profile/", ALICE),
        Visit("login", "/accounts/login/", ANONYMOUS),
        Visit("signup", "/accounts/signup/", ANONYMOUS),
        Visit("api-docs", "/api/docs/", ANONYMOUS, ready=".swagger-ui .opblock"),  # not its "loading" spinner
        Visit("not-found", "/no-such-page-anywhere/", ANONYMOUS, status=404),
        Visit("admin-jobs", "/admin/jobs/job/", STAFF),
    ]
    with contextlib.suppress(NoReverseMatch):
        listed.insert(8, Visit("how-ranks", reverse("leaderboard:how-ranks"), ANONYMOUS))
    return listed


def _visit_ids() -> list:
    import django

    django.setup()  # pytest-django configured the settings; the URL resolver needs the apps at collection
    return [pytest.param(v, width, id=f"{v.page}-{width}") for v in visits() for width in WIDTHS]


@dataclass(frozen=True)
class Sessions:
    cookies: dict[str, list]  # audience -> the session cookie to add
    submission_path: str


@pytest.fixture(scope="module")
def sessions(live_site, django_db_blocker) -> Iterator[Sessions]:
    """alice's and a staff member's sessions, and a submission of alice's to show; removed when the module ends."""
    from contract_documents import finetune_spec
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.tokens import create_token
    from jobs import dispatch
    from jobs.models import Job, Worker
    from registry.models import Dataset
    from submissions.models import Submission

    def cookie(user) -> list:
        client = Client()
        client.force_login(user)
        value = client.cookies[settings.SESSION_COOKIE_NAME].value
        return [{"name": settings.SESSION_COOKIE_NAME, "value": value, "url": live_site.url}]

    with django_db_blocker.unblock():
        staff = get_user_model().objects.create_superuser("sweep-staff", "sweep@example.org", "unused-sweep-pass-1")
        model = live_site.web.models[live_site.web.public[0].slug]
        submission = Submission.objects.create(submitter=live_site.web.owner, language_model=model)
        submission.benchmarks.add(live_site.web.benchmark)
        # a waiting job and a live worker, so that the queue's and the submission's tables are on their pages
        Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                           benchmark=live_site.web.benchmark, kind=Job.Kind.FINETUNE, queue=Job.Queue.GPU,
                           spec=finetune_spec("demo-ner").to_json())  # fmt: skip
        dispatch.record_worker("sweep-trainer@laptop", ["gpu"], gpus=0)
        token, _ = create_token(live_site.web.owner, "lab cluster")  # the profile's tokens table
        made = Sessions({ANONYMOUS: [], ALICE: cookie(live_site.web.owner), STAFF: cookie(staff)},
                        f"/submissions/{submission.pk}/")  # fmt: skip
    try:
        yield made
    finally:
        with django_db_blocker.unblock():
            submission.delete()
            staff.delete()
            token.delete()
            Worker.objects.filter(name="sweep-trainer@laptop").delete()


@pytest.fixture(scope="module")
def axe_js() -> str:
    return axe_source()


@pytest.mark.parametrize(("visit", "width"), _visit_ids())
def test_the_page_fits_the_screen_and_axe_finds_no_serious_violation(
    web, browser, live_site, sessions: Sessions, axe_js: str, visit: Visit, width: int
):
    context = browser.new_context(base_url=live_site.url, viewport=WIDTHS[width], **axe_context_options())
    context.set_default_timeout(TIMEOUT_MS)
    try:
        if sessions.cookies[visit.audience]:
            context.add_cookies(sessions.cookies[visit.audience])
        page = context.new_page()
        path = sessions.submission_path if visit.path == "SUBMISSION" else visit.path
        response = page.goto(path)
        assert response is not None and response.status == visit.status, f"{path}: {response and response.status}"
        if visit.audience != ANONYMOUS:  # a lapsed session would sweep the sign-in page instead
            assert "/accounts/login/" not in page.url, f"{path} sent {visit.audience} to sign in"
        page.wait_for_function(CHARTS_DRAWN)
        if visit.ready:
            page.wait_for_selector(visit.ready)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{visit.page}-{width}.png"), full_page=True)

        problems = []
        scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
        if scroll_width > width:
            problems.append(f"scrolls sideways: {scroll_width} px wide; sticking out: {page.evaluate(STICKING_OUT)}")
        violations = serious_violations(page, axe_js)
        if violations:
            problems.append("axe-core, serious or critical:\n" + describe(violations))
        assert not problems, f"{visit.page} at {width} px ({path}):\n" + "\n".join(problems)
    finally:
        context.close()
