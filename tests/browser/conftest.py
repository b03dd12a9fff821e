"""Browser tests: Debian's Chromium driven by Playwright against a live Django server.

The browser is the system's ``chromium`` package (apt), not one Playwright downloads: CI installs
it with apt (.ci/run) and nothing here reaches the network. Where it is missing the tests skip,
saying what to install, except under ``BIOLM_REQUIRE_BROWSER=1`` (CI), where a missing browser
must fail the run rather than silently drop the suite.

The server and its data live for the whole module (:func:`live_site`), not per test. pytest-django's
``live_server`` fixture would make each test transactional, and a transactional test ends by
flushing every table, the plugin rows synced once per session included: storing the board and
syncing the plugins again would then cost some ten seconds per test. The stories only read, so one
board serves them all. It is committed (the server thread has its own database connection on
PostgreSQL), with alice's signed-in session, and removed when the module ends
(:func:`web_fixture.remove_web_fixture`), leaving the worker's database as the tests that follow
expect it. Each test still takes pytest-django's ``db``: that is what makes the session create
the test database at all, and a test's own writes, if it made any, are rolled back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_launch import DESKTOP, SCREENSHOTS, TIMEOUT_MS, launched_chromium, save_full_page
from web_fixture import WebFixture, build_web_fixture, remove_web_fixture, sync_builtin_plugins


@pytest.fixture(scope="module")
def browser(live_site):
    """One headless Chromium for the module (starting one costs seconds), started after the site
    (and so after the test database exists)."""
    from django.db import connections

    with launched_chromium() as launched:
        yield launched
        # While Playwright's loop runs, Django keeps this thread's connections apart from the others
        # (asgiref's Local for async code): close them now, or PostgreSQL refuses to drop the
        # test database at the end of the session ("accessed by other users").
        connections.close_all()


@dataclass(frozen=True)
class LiveSite:
    url: str  # http://localhost:PORT
    web: WebFixture
    owner_session: str  # the session key of the private model's owner, signed in


@pytest.fixture(scope="module")
def live_site(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[LiveSite]:
    """The site served on a free port, with tests/web_fixture.py's board committed to the test database.

    Database access stays open for the module: the server thread's requests go through the same
    pytest-django blocker as the tests. The artefact store (the model page's loss log) is a
    folder of the module's own. ``django_db_setup`` makes every write land in the test database.
    """
    from django.conf import settings
    from django.test import Client, override_settings
    from pytest_django.live_server_helper import LiveServer

    from registry.models import Benchmark

    var = tmp_path_factory.mktemp("browser-var")
    store = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": var / "store"}}
    with (
        django_db_blocker.unblock(),
        override_settings(BIOLM_VAR_DIR=var, STORAGES={**settings.STORAGES, "default": store}),
    ):
        if not Benchmark.objects.filter(slug="blurb-mini").exists():  # flushed by a transactional test before
            sync_builtin_plugins()
        try:
            web = build_web_fixture()
            owner = Client()
            owner.force_login(web.owner)
            server = LiveServer("localhost", start=False)
            server.thread.static_handler = _through_the_site  # see _through_the_site
            server.start()
            server._live_server_modified_settings.enable()  # what the live_server fixture does per test
            try:
                yield LiveSite(server.url, web, owner.cookies[settings.SESSION_COOKIE_NAME].value)
            finally:
                server._live_server_modified_settings.disable()
                server.stop()
        finally:
            remove_web_fixture()


def _through_the_site(application):
    """The live server's handler for /static/: none, so that WhiteNoise serves those files as in production.

    pytest-django's own handler looks files up in the apps' folders by their source names and cannot
    find the hashed names that pages name (settings.STORAGES); WhiteNoise serves them from STATIC_ROOT,
    which the session collected (tests/static_files.py), compressed and with their long cache.
    """
    return application


@pytest.fixture
def web(live_site, db) -> WebFixture:
    """The module's board; ``db``: see the module's docstring."""
    return live_site.web


@pytest.fixture(scope="module")
def context(browser, live_site):
    """An anonymous browser profile at a desktop size, its relative URLs on the live site.

    One for the module, so that plotly.js (4.8 MB) is fetched and compiled once rather than by
    every test; :func:`page` clears its cookies before each test, so no story inherits another's
    state (the pages keep none elsewhere: no local storage, no service worker).
    """
    made = browser.new_context(viewport=DESKTOP, base_url=live_site.url, accept_downloads=True)
    made.set_default_timeout(TIMEOUT_MS)
    yield made
    made.close()


@pytest.fixture
def screenshot_path(request) -> Path:
    """var/screenshots/<test name>.png (a parameter's brackets made dashes), its folder made (var/ is git-ignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', request.node.name).strip('-')}.png"


@pytest.fixture
def page(context, screenshot_path):
    """A page of that profile; when the test ends, pass or fail, the whole page is saved as
    var/screenshots/<test name>.png for a person to look at (layout, overflow, contrast)."""
    context.clear_cookies()
    opened = context.new_page()
    yield opened
    if not opened.is_closed():
        if opened.url.startswith("http"):  # a test that only made requests has nothing to show
            save_full_page(opened, screenshot_path)
        opened.close()
