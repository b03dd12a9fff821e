"""The public API's schema (/api/schema/) and its Swagger UI (/api/docs/), and what the schema says of the API.

At the top of the site's layers with the URLconf: the schema is generated from the public routes of
the apps (:func:`biolm_site.api_schemas.public_patterns`), which this module may import and they may
not.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from biolm_site import api_schemas
from leaderboard.tables import MAX_PINS

TITLE = "biolm public API"
VERSION = "1.0.0"
DESCRIPTION = f"""JSON access to biolm's leaderboards, models, datasets and results (read-only), and submitting
models with an API token (`/api/v1/submissions`).

* The leaderboard endpoint returns exactly the rows of the leaderboard page under the same query
  string (filters, search, sort, pins), its rows paginated (`page`, `page_size`: default 100, at
  most 1000) while the header fields stay whole.
* Private models are seen only by their owner and by staff (signed in to the site: the session
  cookie); to anyone else they do not exist, in lists, counts and rows alike.
* Every answer carries a strong `ETag`; send it back as `If-None-Match` to get `304 Not Modified`.
  Anonymous answers may be cached for 60 seconds.
* Scores and results are on the 0-100 scale; ranks are 1 + the models significantly better
  (paired bootstrap), so tied models share a rank. At most {MAX_PINS} models can be pinned.
* Submitting (`/api/v1/submissions`) needs an API token, created on your profile page and sent as
  `Authorization: Bearer biolm_...`; the session cookie does not authenticate it. A submitted model
  stays private until you publish it from its submission page.
"""

CHANGELOG = """
## Changelog

* 2026-11 (job contract): a job's `kind` "aggregate" is now "score" (scoring the test predictions and
  recording the result). Submitting takes `preview` (true for a quick preview) and `overrides` (a JSON
  object of the protocol's settings to change) and `rerun`; `protocol` (full or quick) is kept as a
  deprecated alias of `preview` for one release, in requests and in answers.
* 2026-11 (web, second pass): a job has `queue_name`, its queue named by what it does on this site
  ("training", "GPU training" only where a GPU serves it, "scoring"); `queue` keeps the queue's id (`gpu`,
  `cpu`), and `waiting_reason` names queues as `queue_name` does ("waiting for a free training worker").
"""
DESCRIPTION += CHANGELOG


def open_operations_need_no_credentials(result: dict, generator: Any, request: Any, public: bool) -> dict:
    """drf-spectacular's post-processing hook: an operation anyone may call says so with ``security: []``.

    The reading endpoints accept the site's session cookie (an owner sees their private models) but
    need nothing, which drf-spectacular writes as ``[{"cookieAuth": []}, {}]``; Swagger UI draws a
    padlock for that as for a required token. So an operation whose requirements include the empty
    one (no credentials) gets none, and schemes no operation still names are dropped: the cookie is
    in the API's description, and Swagger UI could not send it anyway. Operations that need a token
    (submitting) keep their requirement and their padlock.
    """
    named: set[str] = set()
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            security = operation.get("security")
            if security is None:
                continue
            if {} in security:
                operation["security"] = []
            else:
                named.update(name for requirement in security for name in requirement)
    schemes = result.get("components", {}).get("securitySchemes", {})
    for name in [name for name in schemes if name not in named]:
        del schemes[name]
    return result


class PublicSchemaView(SpectacularAPIView):
    """The public OpenAPI schema, for everyone: this API's routes and submitting with an API token, only.

    Generating from the public routes alone (:func:`biolm_site.api_schemas.public_patterns`), not
    from the site's URLconf, is what keeps the workers' /internal/ endpoints out by construction;
    the global settings' hook, which keeps the internal schema to /internal/, is switched off here.
    """

    urlconf = None  # replaced by the public routes on each request (see get)
    authentication_classes: list = []
    permission_classes = [AllowAny]
    custom_settings = {
        "TITLE": TITLE,
        "DESCRIPTION": DESCRIPTION,
        "VERSION": VERSION,
        "PREPROCESSING_HOOKS": [],
        "POSTPROCESSING_HOOKS": [
            "drf_spectacular.hooks.postprocess_schema_enums",  # the default, kept
            "biolm_site.api_docs.open_operations_need_no_credentials",
        ],
        "SCHEMA_PATH_PREFIX": r"/api/v1",  # tags and operation ids: benchmarks, models, ..., submissions
    }

    @extend_schema(exclude=True)  # as the view it extends: the schema does not describe itself
    def get(self, request, *args, **kwargs):
        self.patterns = api_schemas.public_patterns()  # built here: those URLconfs import this module
        return super().get(request, *args, **kwargs)


class PublicDocsView(SpectacularSwaggerSplitView):
    """Swagger UI over the public schema; its JS and CSS come from drf_spectacular_sidecar under /static/.

    The split view serves Swagger UI's start-up script as a request of its own (``?script``) rather than
    inline, so the site's Content-Security-Policy (no inline script) holds on this page too. Its page
    is the site's own template, which adds what drf-spectacular's lacks for accessibility: the page's
    language and darker colours (templates/leaderboard/api_docs.html).
    """

    template_name = "leaderboard/api_docs.html"
    url_name = "api:schema"
    title = TITLE
    authentication_classes: list = []
    permission_classes = [AllowAny]
