"""The submission form offers only what can run on this site, in a real browser, at a desktop's and a phone's width.

The test database holds BLURB-mini's demo data (tests/conftest.py imports it, as ``make demo`` does) and none of
BLURB's: BLURB is shown disabled with the datasets it needs and the operator's command, BLURB-mini is chosen, and
a post that names BLURB anyway (a page opened before, or a crafted request) is refused beside the benchmark.
Each test leaves its screenshots in var/screenshots/.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from browser_launch import SCREENSHOTS
from playwright_api import Page, expect

pytestmark = pytest.mark.browser

FORM = "/submit/"
PHONE = {"width": 375, "height": 812}
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


def sign_in(context, site) -> None:
    """The session of tests/web_fixture.py's owner (alice), as signing in would give it."""
    from django.conf import settings

    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": site.owner_session, "url": site.url}])


@pytest.fixture(scope="module")
def packed_from_inside(tiny_bert_checkpoint, tmp_path_factory) -> Path:
    """The checkpoint packed the commonest way, from inside its folder: members ``.``, ``./config.json``, ..."""
    archive = tmp_path_factory.mktemp("packed") / "inside.tar.gz"
    subprocess.run(["tar", "-czf", str(archive), "-C", str(tiny_bert_checkpoint), "."], check=True)
    return archive


def test_a_benchmark_without_its_data_is_disabled_with_the_reason_and_a_post_naming_it_is_refused_beside_it(
    web, live_site, page: Page, packed_from_inside: Path
):
    sign_in(page.context, live_site)
    page.goto(FORM)
    choice = page.get_by_label("Benchmark", exact=True)
    expect(choice).to_have_value("blurb-mini")  # the first benchmark that can run here
    blurb = choice.locator('option[value="blurb"]')
    expect(blurb).to_be_disabled()
    expect(blurb).to_contain_text("its data is not imported here")
    reason = page.locator('#unavailable-benchmarks li[data-benchmark="blurb"]')
    expect(reason).to_be_hidden()  # behind a tap: the list is long
    page.locator("#unavailable summary").click()
    expect(reason).to_be_visible()
    expect(reason).to_contain_text(re.compile(r"BLURB needs bc5-chem, bc5-disease, ncbi-disease, .* imported:"))
    expect(reason.locator("code")).to_contain_text("manage.py import_dataset bc5-chem bc5-disease ncbi-disease")
    with pytest.raises(Exception, match="option being selected is not enabled"):  # a person cannot choose it
        choice.select_option("blurb", timeout=1000)

    # A page that offered it before its data was removed: the post names it, and submit() refuses it.
    blurb.evaluate("option => { option.disabled = false; option.selected = true; }")
    choice.dispatch_event("change")
    page.get_by_label("A checkpoint").check()
    page.get_by_label("Checkpoint archive").set_input_files(str(packed_from_inside))
    page.get_by_label("Model name").fill("Inside")
    page.get_by_label("Licence").fill("apache-2.0")
    page.get_by_role("button", name="Check and submit").click()
    beside = page.locator("#err-benchmark")
    expect(beside).to_contain_text("blurb needs bc5-chem")
    expect(beside).to_contain_text("an operator imports them with manage.py import_dataset bc5-chem")
    expect(page.locator("#error-summary")).to_contain_text("The submission was not queued")
    expect(page.get_by_label("Benchmark", exact=True).locator('option[value="blurb"]')).to_be_disabled()


@pytest.mark.parametrize("width", [1400, 375])
def test_the_form_shows_how_to_pack_and_fetch_a_checkpoint_and_never_scrolls_sideways(
    web, browser, live_site, width: int
):
    size = {"width": width, "height": 900} if width > 375 else PHONE
    context = browser.new_context(base_url=live_site.url, viewport=size, is_mobile=width == 375)
    try:
        sign_in(context, live_site)
        page = context.new_page()
        page.goto(FORM)
        pack = page.locator("#pack-command")
        expect(pack).to_have_text("tar -czf model.tar.gz -C path/to/checkpoint .")
        download = page.locator("#download-command")
        expect(download).to_contain_text('--include "*.json" "*.safetensors" "*.txt" "*.model" --local-dir')
        page.locator("#unavailable summary").click()
        for box in (pack, download, page.locator("#unavailable-benchmarks")):
            box.scroll_into_view_if_needed()
            expect(box).to_be_in_viewport()
            assert box.evaluate("el => el.getBoundingClientRect().right") <= width + 1, "a command runs off the page"
        assert page.evaluate(SIDEWAYS) <= 1, f"the form scrolls sideways at {width} px"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"submit-form-{width}.png"), full_page=True)
        for part in ("hint-checkpoint", "hint-benchmark"):  # close-ups, readable where the whole page is not
            page.locator(f"#{part}").screenshot(path=str(SCREENSHOTS / f"submit-form-{width}-{part}.png"))
    finally:
        context.close()


def test_a_base_model_typed_says_the_pretraining_continued_and_the_field_suggests_the_sites_models(
    web, live_site, page: Page
):
    sign_in(page.context, live_site)
    page.goto(FORM)
    start = page.locator("#id_initialisation")
    expect(start).to_have_value("")  # not stated until the submitter says
    base = page.get_by_label(re.compile("^Base model"))
    expect(base).to_have_attribute("list", "base-models")
    assert page.locator("#base-models option").count() > 0, "no model of this site is suggested"
    base.fill("dmis-lab/biobert-v1.1")
    base.dispatch_event("change")
    expect(start).to_have_value("continual")
    base.fill("")
    start.select_option("scratch")
    base.fill("another/base")
    base.dispatch_event("change")
    expect(start).to_have_value("scratch")  # stated: left as stated (submit() then says the two disagree)
    page.locator("#pretraining-facts").screenshot(path=str(SCREENSHOTS / "submit-form-pretraining-facts.png"))
