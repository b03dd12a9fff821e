"""A submitter copies a model's results for its Hugging Face model card, in Chromium, at 1,400 and 375 px.

The button puts the block on the clipboard (read back here, with the permission a browser asks for), the
Hub's own card parser reads what was copied, the section fits a phone, and axe finds nothing serious.
Screenshots of the section in var/screenshots/, for a person to look at.
"""

from __future__ import annotations

import pytest
from axe import axe_context_options, describe, serious_violations
from browser_launch import save_full_page
from playwright_api import expect

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": {"width": 1400, "height": 900}, "phone": {"width": 375, "height": 800}}


@pytest.mark.parametrize("width", WIDTHS)
def test_the_copy_button_puts_a_model_index_the_hubs_parser_reads_on_the_clipboard(
    web, browser, live_site, screenshot_path, width
):
    from huggingface_hub import ModelCard

    model = web.models[web.public[0].slug]
    context = browser.new_context(base_url=live_site.url, viewport=WIDTHS[width], **axe_context_options())
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_site.url)
    page = context.new_page()
    try:
        page.goto(model.get_absolute_url())
        heading = page.get_by_role("heading", name="For your model card")
        heading.scroll_into_view_if_needed()
        page.get_by_role("button", name="Copy for your model card").click()
        button = page.locator('button[data-copy="card-header"]')  # its name is now what it says it did
        expect(button).to_have_text("Copied")
        expect(page.locator("#copy-status")).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator("#card-header").inner_text()
        card = ModelCard(copied + "\n# " + model.name + "\n")
        assert card.data.eval_results, "the copied header holds no results"
        assert {r.metric_args["biolm_model"] for r in card.data.eval_results} == {model.address}
        block = page.locator("#card-header")
        box = block.bounding_box()
        assert box is not None and box["x"] + box["width"] <= WIDTHS[width]["width"], box
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        violations = serious_violations(page)
        assert not violations, describe(violations)
        page.locator(".copyable").first.screenshot(
            path=str(screenshot_path.with_name(screenshot_path.stem + "-section.png"))
        )
    finally:
        save_full_page(page, screenshot_path)
        context.close()
