"""``/favicon.ico``: the site's icon at the address that browsers, feed readers and bookmarks ask for by themselves.

Pages name the SVG icon in ``<link rel="icon">`` (templates/base.html); clients that ask for
``/favicon.ico`` regardless got a 404 in every log. The same icon as a 32 px ICO is read from the
static files (``leaderboard/favicon.ico``) through the staticfiles finders, so it answers with or
without ``collectstatic``, and a day's cache keeps it from being asked for on every page.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

ICON = "leaderboard/favicon.ico"


@cache
def _icon() -> bytes:
    return Path(finders.find(ICON)).read_bytes()


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_icon(), content_type="image/x-icon")
