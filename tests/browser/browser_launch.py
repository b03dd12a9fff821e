"""Debian's Chromium under Playwright, for every browser test module (tests/browser/conftest.py and the
modules that drive a site of their own, such as test_submitters_web.py).

The browser is the system's ``chromium`` package (apt), not one Playwright downloads: CI installs it
with apt (.ci/run) and nothing here reaches the network. Where it is missing the tests skip, saying
what to install, except under ``BIOLM_REQUIRE_BROWSER=1`` (CI), where a missing browser must fail the
run rather than silently drop the suite.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
DESKTOP = {"width": 1280, "height": 900}
TIMEOUT_MS = 15_000  # a page or chart that takes longer on a loaded CI runner is a failure worth seeing


def chromium_path() -> str | None:
    """BIOLM_CHROMIUM if set, else Debian's ``chromium`` (or the older ``chromium-browser``) on PATH."""
    explicit = os.environ.get("BIOLM_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(reason: str) -> None:
    if os.environ.get("BIOLM_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (BIOLM_REQUIRE_BROWSER=1: the browser tests must run here)", pytrace=False)
    pytest.skip(reason)


@contextmanager
def launched_chromium() -> Iterator:
    """Debian's Chromium, headless, under Playwright; skips (or fails under BIOLM_REQUIRE_BROWSER=1) without it.

    Playwright's sync API keeps an asyncio loop running in this thread, which Django's ORM takes
    for async code and refuses (SynchronousOnlyOperation) unless DJANGO_ALLOW_ASYNC_UNSAFE is set
    (Playwright's own advice for Django). The ORM calls here never run inside that loop, so the
    check is lifted, and only while the browser is up: other modules keep it.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright not installed: pip install -r requirements.lock")
    executable = chromium_path()
    if executable is None:
        where = os.environ.get("BIOLM_CHROMIUM") or "chromium on PATH"
        _missing(f"chromium not found ({where}): apt install chromium")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=executable, headless=True)
            yield launched
            launched.close()


def save_full_page(page, path: Path) -> None:
    """The whole page as a PNG, tried twice: now and then, on a loaded CI runner, Chromium refuses a
    full-page capture with "Unable to capture screenshot" (its compositor gave no frame in time; a
    known transient of the DevTools protocol). A second refusal is an error, as any other is."""
    from playwright_api import Error

    try:
        page.screenshot(path=str(path), full_page=True)
    except Error as error:
        if "Unable to capture screenshot" not in str(error):
            raise
        page.wait_for_timeout(500)
        page.screenshot(path=str(path), full_page=True)
