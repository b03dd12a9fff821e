"""The public API's Swagger UI page in Chromium: padlocks only where a token is needed, and no serious
or critical WCAG 2.1 A/AA violation (axe-core) with its operations open, at desktop and phone widths."""

from __future__ import annotations

import pytest
from axe import axe_context_options, axe_source, describe, serious_violations
from browser_launch import SCREENSHOTS, TIMEOUT_MS

pytestmark = pytest.mark.browser

OPERATION = "#swagger-ui .opblock"
WIDTHS = {1400: {"width": 1400, "height": 900}, 375: {"width": 375, "height": 812}}


@pytest.mark.parametrize("width", WIDTHS)
def test_swagger_ui_draws_padlocks_only_on_token_endpoints_and_axe_finds_no_serious_violation(
    web, browser, live_site, width: int
):
    source = axe_source()
    context = browser.new_context(base_url=live_site.url, viewport=WIDTHS[width], **axe_context_options())
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto("/api/docs/")
        page.wait_for_selector(OPERATION)
        assert page.evaluate("() => document.documentElement.lang") == "en"
        locked = page.locator(f"{OPERATION}:has(.authorization__btn) .opblock-summary-path").all_inner_texts()
        assert locked and all(path.strip().startswith("/api/v1/submissions") for path in locked), locked
        # One reading and one submitting operation opened, so their parameters and buttons are checked too.
        for kind in ("get", "post"):
            page.locator(f".opblock-{kind} .opblock-summary-control").first.click()
        page.wait_for_selector(".opblock.is-open .opblock-body")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"api-docs-open-{width}.png"), full_page=True)
        violations = serious_violations(page, source)
        assert not violations, describe(violations)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    finally:
        context.close()
