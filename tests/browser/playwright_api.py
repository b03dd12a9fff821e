"""Playwright's sync API for the browser test modules, or the importing module skipped where it is missing.

An environment installed before the lock pinned Playwright lacks it: its browser tests skip, saying
what to install, except under ``BIOLM_REQUIRE_BROWSER=1`` (CI), where the import error fails the run.
"""

from __future__ import annotations

import os

import pytest

try:
    from playwright.sync_api import BrowserContext, Error, Page, expect
except ImportError:
    if os.environ.get("BIOLM_REQUIRE_BROWSER") == "1":
        raise
    pytest.skip("playwright not installed: pip install -r requirements.lock", allow_module_level=True)

__all__ = ["BrowserContext", "Error", "Page", "expect"]
