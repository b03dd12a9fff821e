"""Submitting by Hugging Face Hub id through the form, in a real Chromium, at a desktop's and a phone's width.

The Hub is the stand-in of tests/hub_standin.py on a free port (the real one lies outside this machine):
typing the id asks the Hub, which pre-fills the name and licence from the repository's card and says
which commit and how many files it will fetch; the submission's page shows the Hub id and commit, and
its first job, the fetch, which the CPU worker then runs. Each width leaves a screenshot in var/screenshots/.
"""

from __future__ import annotations

import re

import pytest
from axe import axe_context_options, describe, serious_violations
from browser_launch import save_full_page
from hub_standin import HubStandIn
from playwright_api import Page, expect

pytestmark = pytest.mark.browser
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
CARD = {"license": "apache-2.0", "base_model": "google-bert/bert-base-uncased"}


@pytest.fixture(scope="module")
def hub(live_site, django_db_blocker, tiny_bert_checkpoint):
    """The stand-in Hub for the module, one repository per width (each submission a new one); the rows the
    live server committed are removed when the module ends (a test's own transaction would roll a delete back)."""
    from django.test import override_settings
    from huggingface_hub import constants

    server = HubStandIn().start()
    for repository in ("biolm-test/tiny-bert", "biolm-test/tiny-bert-1400", "biolm-test/tiny-bert-375"):
        server.add_checkpoint(repository, tiny_bert_checkpoint, card=CARD)
    with override_settings(BIOLM_HUB_ENDPOINT=server.endpoint), pytest.MonkeyPatch.context() as patch:
        patch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield server
    server.stop()
    with django_db_blocker.unblock():
        _remove_what_the_site_committed()


def _remove_what_the_site_committed() -> None:
    from jobs.models import Job
    from registry.models import LanguageModel
    from submissions.models import Submission

    models = LanguageModel.objects.filter(hub_id__startswith="biolm-test/")
    Job.objects.filter(language_model__in=models).delete()
    Submission.objects.filter(language_model__in=models).delete()
    models.delete()


@pytest.mark.parametrize("width", [1400, 375])
def test_a_hub_id_typed_in_the_form_prefills_the_card_and_queues_the_fetch_first(
    web, hub: HubStandIn, browser, live_site, screenshot_path, width: int
):
    from django.conf import settings

    context = browser.new_context(base_url=live_site.url, viewport={"width": width, "height": 900},
                                  is_mobile=width == 375, **axe_context_options())  # fmt: skip
    page = context.new_page()
    try:
        _submit_by_hub_id(page, hub, live_site, settings, f"biolm-test/tiny-bert-{width}")
    finally:
        save_full_page(page, screenshot_path)
        context.close()


def _submit_by_hub_id(page: Page, hub: HubStandIn, live_site, settings, repository: str) -> None:
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": live_site.owner_session,
                               "url": live_site.url}])  # fmt: skip
    page.goto("/submit/")
    page.get_by_label("A Hugging Face Hub model").check()
    expect(page.get_by_label("Checkpoint archive")).to_be_hidden()
    hub_id = page.get_by_label("Hugging Face Hub id")
    hub_id.fill(f"{repository}@main")
    hub_id.press("Tab")
    commit = hub.repositories[repository].commit
    expect(page.locator("#hub-found")).to_contain_text(f"{repository} at commit {commit[:12]}")
    expect(page.get_by_label("Model name")).to_have_value(repository.split("/")[1])
    expect(page.get_by_label("Licence")).to_have_value("apache-2.0")
    expect(page.get_by_label("Base model")).to_have_value("google-bert/bert-base-uncased")
    violations = serious_violations(page)
    assert not violations, describe(violations)
    assert page.evaluate(SIDEWAYS) <= 0

    page.get_by_role("button", name="Check and submit").click()
    expect(page).to_have_url(re.compile(r"/submissions/\d+/$"))
    source = page.locator(".hub-source")
    expect(source).to_contain_text(f"{repository} at commit {commit[:12]}")
    expect(page.locator(".messages, [role=status], body").first).not_to_contain_text("Reused")
    expect(page.locator("body")).to_contain_text("fetch")
    violations = serious_violations(page)
    assert not violations, describe(violations)
    assert page.evaluate(SIDEWAYS) <= 0


def test_an_unknown_hub_id_is_said_beside_the_field_before_and_after_sending(web, hub, live_site, page: Page):
    from django.conf import settings

    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": live_site.owner_session,
                               "url": live_site.url}])  # fmt: skip
    page.goto("/submit/")
    page.get_by_label("A Hugging Face Hub model").check()
    page.get_by_label("Hugging Face Hub id").fill("biolm-test/nothing-here")
    page.get_by_label("Hugging Face Hub id").press("Tab")
    expect(page.locator("#hub-found")).to_contain_text("no model repository biolm-test/nothing-here on the Hub")
    page.get_by_label("Model name").fill("Nothing")
    page.get_by_label("Licence").fill("mit")
    page.get_by_role("button", name="Check and submit").click()
    expect(page.locator("#err-hub")).to_contain_text("no model repository biolm-test/nothing-here on the Hub")
    expect(page.locator("#error-summary")).to_contain_text("The submission was not queued")
