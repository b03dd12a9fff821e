"""Which endpoints each OpenAPI schema describes: the workers' and the public one never mix.

The site serves two schemas from one drf-spectacular. The internal one (/internal/schema/, behind
the worker secret) is generated from the whole URLconf with the global SPECTACULAR_SETTINGS; this
hook keeps it to /internal/, so the public API's views neither appear in it nor get fuzzed with a
job's token. The public schema (/api/schema/) is generated from the public routes alone
(:func:`public_patterns`: the read-only API and submitting with an API token) and turns this hook
off (``biolm_site.api_docs.PublicSchemaView``). For the same reason ``manage.py
spectacular`` writes the internal schema; the public one is what GET /api/schema/ answers.
"""

from __future__ import annotations

from typing import Any

INTERNAL_PREFIX = "/internal/"


def internal_endpoints_only(endpoints: list[tuple[str, str, str, Any]]) -> list[tuple[str, str, str, Any]]:
    """drf-spectacular PREPROCESSING_HOOK: the (path, regex, method, view) endpoints under /internal/."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(INTERNAL_PREFIX)]


def public_patterns() -> list:
    """The routes the public schema (/api/schema/) describes, at the paths the site serves them:

    the read-only API (``leaderboard.api_urls``, written with full paths) and submitting with an
    API token (``submissions.api_urls``, included under ``api/v1/`` as in ``biolm_site.urls``).
    Built when the schema is asked for, not at import: those URLconfs import the views that
    serve this schema.
    """
    from django.urls import include, path

    return [path("", include("leaderboard.api_urls")), path("api/v1/", include("submissions.api_urls"))]
