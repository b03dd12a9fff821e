"""The teardown's full-page screenshot: one transient refusal from Chromium is tried again, nothing else is hidden."""

from __future__ import annotations

import pytest
from browser_launch import save_full_page
from playwright_api import Error

REFUSED = "Page.screenshot: Protocol error (Page.captureScreenshot): Unable to capture screenshot"


class Refusing:
    """A page whose first ``refusals`` captures fail with ``message``; counts captures and waits."""

    def __init__(self, refusals: int, message: str = REFUSED) -> None:
        self.refusals, self.message, self.captures, self.waits = refusals, message, 0, []

    def screenshot(self, path: str, full_page: bool) -> None:
        assert full_page
        self.captures += 1
        if self.captures <= self.refusals:
            raise Error(self.message)
        with open(path, "wb") as handle:
            handle.write(b"\x89PNG")

    def wait_for_timeout(self, milliseconds: float) -> None:
        self.waits.append(milliseconds)


def test_a_capture_refused_once_is_taken_on_the_second_try(tmp_path):
    page = Refusing(refusals=1)
    save_full_page(page, tmp_path / "page.png")
    assert page.captures == 2 and page.waits == [500]
    assert (tmp_path / "page.png").read_bytes() == b"\x89PNG"


def test_a_capture_refused_twice_fails_the_test(tmp_path):
    with pytest.raises(Error, match="Unable to capture screenshot"):
        save_full_page(Refusing(refusals=2), tmp_path / "page.png")


def test_any_other_error_is_not_retried(tmp_path):
    page = Refusing(refusals=1, message="Page.screenshot: Target page, context or browser has been closed")
    with pytest.raises(Error, match="has been closed"):
        save_full_page(page, tmp_path / "page.png")
    assert page.captures == 1
