"""The public read-only API's routes (leaderboard.api), included at the site's root in the ``api`` namespace
(with the schema's and its docs' routes, which the site's URLconf adds from :mod:`biolm_site.api_docs`).

Paths are written in full (``api/v1/...``) rather than under an ``include("api/", ...)`` prefix,
because this module is also the URLconf the public schema is generated from: the schema's paths
then read exactly as a client calls them, and only what is listed here can appear in it.

Slugs are matched as plugin specs write them (biolm.name_patterns.SLUG_RE allows '.', as in a published
model's ``bioformer--biobert-base-v1.1``), wider than Django's ``<slug:>``; ``\\Z``, not ``$``, so a
trailing newline is not part of a match.
"""

from django.urls import path, re_path

from leaderboard import api

app_name = "api"
SLUG = r"(?P<slug>[-a-zA-Z0-9_.]+)"
# A model's address, owner/name: a username (Django's validator: letters, digits, @.+-_) or "papers", then a slug.
MODEL = r"(?P<namespace>[\w.@+-]+)/(?P<name>[-a-zA-Z0-9_.]+)"

urlpatterns = [
    path("api/v1/benchmarks/", api.BenchmarkList.as_view(), name="benchmark-list"),
    re_path(
        rf"^api/v1/benchmarks/{SLUG}/leaderboard\Z", api.BenchmarkLeaderboard.as_view(), name="benchmark-leaderboard"
    ),
    path("api/v1/models/", api.ModelList.as_view(), name="model-list"),
    re_path(rf"^api/v1/models/{MODEL}\Z", api.ModelDetail.as_view(), name="model-detail"),
    re_path(rf"^api/v1/models/{SLUG}\Z", api.ModelMoved.as_view(), name="model-moved"),  # before owner/name
    path("api/v1/datasets/", api.DatasetList.as_view(), name="dataset-list"),
    re_path(rf"^api/v1/datasets/{SLUG}\Z", api.DatasetDetail.as_view(), name="dataset-detail"),
    path("api/v1/results/", api.ResultList.as_view(), name="result-list"),
]
