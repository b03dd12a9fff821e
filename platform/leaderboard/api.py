"""The public read-only JSON API under /api/v1/: benchmarks, leaderboards, models, datasets, results.

What a script downloads is what a reader sees: the leaderboard endpoint returns exactly the
page's board (:func:`leaderboard.tables.leaderboard_for` with the same :class:`~leaderboard.tables.View`
read from the same query string, serialised by :mod:`leaderboard.serializers`), only with its rows
paginated. Every endpoint starts from ``LanguageModel.objects.visible_to(user)``, the one privacy
rule: a private model appears only to its owner and to staff, in rows, counts and results alike,
and its slug answers the same 404 as a slug that does not exist.

Callers are the site's own users (its session cookie) or anonymous; the workers' token and
secret mean nothing here. Every GET answers with a strong ETag (a hash of the body, so any
change of a result, score or rank, or of what this caller may see, changes it) and honours
``If-None-Match`` with a 304. Anonymous answers are ``public, max-age=60``; a signed-in caller's
are ``private``, and every answer varies on ``Cookie``, so no shared cache can hand an owner's
private rows to anyone else. The schema at /api/schema/ describes this API and submitting with an
API token (submissions.api) only (the workers'
API is at /internal/schema/, behind the worker secret); /api/docs/ renders it with Swagger UI
served from /static/.
"""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404, HttpResponse, HttpResponseBase, HttpResponsePermanentRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from biolm.model_identity import PAPERS_NAMESPACE
from biolm_site.api import ErrorSerializer, PublicPagination
from leaderboard import api_serializers as shapes
from leaderboard import board_cache
from leaderboard.models import Result, Score
from leaderboard.tables import MAX_PINS, View, leaderboard_for
from registry.models import Benchmark, BenchmarkEntry, Dataset, LanguageModel, ModelAlias

ERRORS = OpenApiResponse(ErrorSerializer, description="No such object or page (a private model: none).")
CACHE_MAX_AGE_S = 60
# The routes' slug (api_urls.SLUG), said in the schema so that generated clients (and the fuzz tests)
# send slugs; a leading letter or digit, as every spec and registered slug has, keeps "." and ".." out.
SLUG = OpenApiParameter(
    "slug", str, OpenApiParameter.PATH, required=True, pattern=r"^[a-zA-Z0-9][-a-zA-Z0-9_.]*$", description="Its slug."
)

# A model's address in the routes (api_urls.MODEL): its owner's username (or "papers") and its name.
NAMESPACE = OpenApiParameter(
    "namespace", str, OpenApiParameter.PATH, required=True, pattern=r"^[a-zA-Z0-9][-a-zA-Z0-9_.@+]*$",
    description="The model's owner: a username, or papers for a model reported in a paper.",
)  # fmt: skip
NAME = OpenApiParameter(
    "name", str, OpenApiParameter.PATH, required=True, pattern=r"^[a-zA-Z0-9][-a-zA-Z0-9_.]*$",
    description="The model's name within its owner's.",
)  # fmt: skip


def clean_params(params: QueryDict) -> QueryDict:
    """The query string without NUL characters: PostgreSQL refuses them in a text parameter (a 500).

    Like :meth:`View.from_params` dropping unknown values, a malformed value is tolerated, not an error.
    """
    cleaned = params.copy()
    for key, values in params.lists():
        cleaned.setlist(key, [value.replace("\x00", "") for value in values])
    return cleaned


class PublicAPI:
    """What every public endpoint shares: read-only, JSON, session or anonymous, visibility, ETags, caching.

    A mixin placed before DRF's view classes, so the generic list and detail views get it too.
    """

    authentication_classes = [SessionAuthentication]  # the site's sign-in: owners and staff see private rows
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]
    http_method_names = ["get", "head", "options"]
    request: Request

    def initial(self, request: Request, *args, **kwargs) -> None:
        """Refuse other methods before authenticating: a write is a 405, never a CSRF 403 for the signed-in."""
        if request.method.lower() not in self.http_method_names:
            raise MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)

    @property
    def viewer(self):
        """The signed-in user, or an anonymous one (the REST_FRAMEWORK settings leave it None, for the workers)."""
        user = self.request.user
        return user if user is not None else AnonymousUser()

    def visible_models(self) -> QuerySet[LanguageModel]:
        return LanguageModel.objects.visible_to(self.viewer)

    def params(self) -> QueryDict:
        return clean_params(self.request.query_params)

    def finalize_response(self, request: Request, response, *args, **kwargs) -> HttpResponseBase:
        response = super().finalize_response(request, response, *args, **kwargs)
        return conditional(request, response)


def conditional(request: Request, response: HttpResponseBase) -> HttpResponseBase:
    """Caching headers on every answer; on a successful GET or HEAD, a strong ETag and the 304 it earns.

    The ETag hashes the rendered body, so it changes whenever anything shown changes (a result, a
    rescored rank, a model made public, the caller's own private rows) and never otherwise, with
    no bookkeeping of which tables a view read. The body is still computed for a 304: what is
    saved is the transfer, and correctness does not depend on invalidation.
    """
    user = getattr(request._request, "user", None)  # the session's, without re-running DRF's authentication
    if user is not None and user.is_authenticated:
        # An owner's or staff's answer may hold private rows: only their own browser may keep it.
        patch_cache_control(response, private=True, no_cache=True)
    else:
        patch_cache_control(response, public=True, max_age=CACHE_MAX_AGE_S)
    patch_vary_headers(response, ["Cookie"])
    if request.method not in ("GET", "HEAD") or response.status_code != 200 or response.streaming:
        return response
    if isinstance(response, Response):
        response.render()
    response["ETag"] = f'"{hashlib.sha256(response.content).hexdigest()}"'
    return get_conditional_response(request._request, etag=response["ETag"], response=response) or response


# --- benchmarks and their leaderboards ---------------------------------------------------------------------------


@extend_schema(summary="Active benchmarks", description="With the number of models on each that the caller may see.")
class BenchmarkList(PublicAPI, generics.ListAPIView):
    serializer_class = shapes.BenchmarkSerializer
    pagination_class = None  # a handful: the whole list in one answer

    def get_queryset(self) -> QuerySet[Benchmark]:
        visible = self.visible_models()
        return (
            Benchmark.objects.filter(active=True)
            # distinct: as on the index page, each model once, however many joins
            .annotate(
                n_models=Count("scores__language_model", filter=Q(scores__language_model__in=visible), distinct=True)
            )
            .order_by("slug")
        )


def _choice(name: str, values: list[str], description: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, enum=values, description=description)


LEADERBOARD_PARAMETERS = [
    _choice("origin", list(LanguageModel.Origin.values), "Models reported in a paper, or evaluated on biolm."),
    OpenApiParameter("architecture", str, description="An architecture's slug (e.g. `bert`)."),
    _choice("size", [slug for slug, *_ in LanguageModel.SIZE_BUCKETS], "Parameter-count bucket."),
    _choice("domain", list(LanguageModel.Domain.values), "Pretraining domain."),
    _choice("vocabulary", list(LanguageModel.VocabularyKind.values), "Domain-specific or general vocabulary."),
    _choice("start", list(LanguageModel.Initialisation.values), "Pretrained from scratch, or continued."),
    OpenApiParameter("q", str, description="Search in model names and slugs."),
    OpenApiParameter(
        "sort",
        str,
        description='"rank" (default: stored rank, then score), "model", "parameters", "score", "throughput", '
        "or a column's key (see `columns`). Missing values sort last either way.",
    ),
    _choice("dir", ["asc", "desc"], "Sort direction; default descending (best first)."),
    OpenApiParameter(
        "pins", str, description=f"Up to {MAX_PINS} comma-separated model slugs kept on top, whatever the filters."
    ),
    OpenApiParameter("page", int, description="A page of rows (from 1)."),
    OpenApiParameter("page_size", int, description="Rows per page: default 100, at most 1000."),
]


class BenchmarkLeaderboard(PublicAPI, APIView):
    pagination_class = PublicPagination

    @extend_schema(
        summary="A benchmark's leaderboard",
        description="The leaderboard page's board as JSON, the same rows under the same query string. Unknown "
        "filter values are ignored, as on the page.",
        parameters=[SLUG, *LEADERBOARD_PARAMETERS],
        responses={200: shapes.PaginatedLeaderboardSerializer, 404: ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        benchmark = get_object_or_404(Benchmark, slug=slug, active=True)
        params = self.params()
        view = View.from_params(params)
        paging = {name: params.get(name, "") for name in ("page", "page_size")}
        # One cached answer per view, page and host (the next/previous links are absolute).
        query = f"{request.get_host()}|{view.query()}|{paging['page']}|{paging['page_size']}"

        def answer() -> dict:
            board = leaderboard_for(benchmark, self.visible_models(), view)
            paginator = self.pagination_class()
            rows = paginator.paginate_queryset(board.rows, request, view=self)
            data = board.as_json(list(rows))  # only this page's rows are serialised
            header = {key: value for key, value in data.items() if key != "rows"}
            return {
                **header,
                "count": paginator.page.paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "rows": data["rows"],
            }

        def rendered() -> bytes:
            return JSONRenderer().render(answer())

        # The JSON itself is cached, not the data: rendering 100 rows x 30 datasets again on every
        # request was most of a cached answer's time (docs/performance.md, The leaderboard).
        body = board_cache.cached("api-json", benchmark, request._request, query, rendered)
        return HttpResponse(body, content_type="application/json")


# --- models --------------------------------------------------------------------------------------------------------


@extend_schema(
    summary="Models",
    description="Every model the caller may see, by name.",
    responses={200: shapes.ModelSummarySerializer(many=True), 404: ERRORS},
)
class ModelList(PublicAPI, generics.ListAPIView):
    serializer_class = shapes.ModelSummarySerializer
    pagination_class = PublicPagination

    def get_queryset(self) -> QuerySet[LanguageModel]:
        return self.visible_models().select_related("architecture").order_by("name", "slug")


def _results() -> QuerySet[Result]:
    """Results with what their serializer reads, in a stable order (pages must not overlap)."""
    return Result.objects.select_related("language_model", "dataset", "metric", "classes").order_by(
        "language_model__name", "language_model__slug", "dataset__slug", "metric__slug", "variant", "scope", "pk"
    )


# The one answer for a model that is missing, private to someone else, or behind an old path: the same body
# on every route, so no difference in wording tells a hidden model from an absent one.
NO_MODEL = "No model at this address."


@extend_schema(
    summary="A model's card",
    description="Its facets, its score, rank and tie on each active benchmark, and all its results.",
    parameters=[NAMESPACE, NAME],
    responses={200: shapes.ModelDetailSerializer, 404: ERRORS},
)
class ModelDetail(PublicAPI, generics.RetrieveAPIView):
    """A model by its address, ``owner/name``."""

    serializer_class = shapes.ModelDetailSerializer

    def get(self, request: Request, *args, **kwargs) -> HttpResponseBase:
        """A published row's address from before it was merged into its model redirects (301) to the model."""
        namespace, name = self.kwargs["namespace"], self.kwargs["name"]
        merged = self.visible_models().merged_from(name) if namespace == PAPERS_NAMESPACE else None
        if merged is not None and merged.address_parts != (namespace, name):
            return HttpResponsePermanentRedirect(reverse("api:model-detail", args=merged.address_parts))
        return super().get(request, *args, **kwargs)

    def get_object(self) -> LanguageModel:
        model = self.get_queryset().filter(namespace=self.kwargs["namespace"], address_name=self.kwargs["name"]).first()
        if model is None:
            raise Http404(NO_MODEL)
        return model

    def get_queryset(self) -> QuerySet[LanguageModel]:
        scores = Score.objects.filter(benchmark__active=True).select_related("benchmark").order_by("benchmark__slug")
        return (
            self.visible_models()  # a private model's slug: the same 404 as a missing one
            .select_related("architecture", "version_of")
            .prefetch_related(
                Prefetch(
                    "aliases", queryset=ModelAlias.objects.select_related("benchmark").order_by("benchmark__slug")
                ),
                Prefetch("scores", queryset=scores, to_attr="api_scores"),
                Prefetch("results", queryset=_results(), to_attr="api_results"),
            )
        )


@extend_schema(exclude=True)
class ModelMoved(PublicAPI, APIView):
    """A model's old API path (``api/v1/models/<slug>``): a permanent redirect to its address for whoever may
    see the model, and the same 404 as a missing one for anyone else."""

    def get(self, request: Request, slug: str) -> HttpResponseBase:
        visible = self.visible_models()
        model = visible.filter(slug=slug).first() or visible.merged_from(slug)  # a merged published row's too
        if model is None:
            raise Http404(NO_MODEL)
        return HttpResponsePermanentRedirect(reverse("api:model-detail", args=model.address_parts))


# --- datasets ------------------------------------------------------------------------------------------------------


class DatasetViews(PublicAPI):
    def get_queryset(self) -> QuerySet[Dataset]:
        visible = self.visible_models()
        return (
            Dataset.objects.filter(active=True)  # as on the dataset pages: one no plugin contributes is gone
            .select_related("task_type", "metric")
            .annotate(
                n_models=Count("results__language_model", filter=Q(results__language_model__in=visible), distinct=True)
            )
            .order_by("slug")
        )


@extend_schema(summary="Datasets", description="Active datasets, with how many visible models have results on each.")
class DatasetList(DatasetViews, generics.ListAPIView):
    serializer_class = shapes.DatasetSummarySerializer
    pagination_class = None  # dozens at most


@extend_schema(
    summary="A dataset's card",
    description="Its metric, task, splits, licence and access, and the results of the models the caller may see "
    "(never its examples or gold labels).",
    parameters=[SLUG],
    responses={200: shapes.DatasetDetailSerializer, 404: ERRORS},
)
class DatasetDetail(DatasetViews, generics.RetrieveAPIView):
    serializer_class = shapes.DatasetDetailSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Dataset]:
        entries = BenchmarkEntry.objects.filter(benchmark__active=True).select_related("benchmark")
        results = _results().filter(language_model__in=self.visible_models())
        return (
            super()
            .get_queryset()
            .prefetch_related(
                Prefetch("entries", queryset=entries, to_attr="api_entries"),
                Prefetch("results", queryset=results, to_attr="api_results"),
            )
        )

    def get_object(self) -> Dataset:
        dataset = super().get_object()
        dataset.api_benchmarks = sorted({entry.benchmark.slug for entry in dataset.api_entries})
        return dataset


# --- results -------------------------------------------------------------------------------------------------------


@extend_schema(
    summary="Results",
    description="Every result of the models the caller may see, filtered by model, dataset or benchmark. An "
    "unknown (or private) slug filters everything out.",
    parameters=[
        OpenApiParameter("model", str, description="A model's slug."),
        OpenApiParameter("dataset", str, description="A dataset's slug."),
        OpenApiParameter(
            "benchmark",
            str,
            description="A benchmark's slug: the results its scores are built from (its entries' dataset, metric "
            "and variant; for a paper's model, the numbers that benchmark's paper printed).",
        ),
    ],
    responses={200: shapes.ResultSerializer(many=True), 404: ERRORS},
)
class ResultList(PublicAPI, generics.ListAPIView):
    serializer_class = shapes.ResultSerializer
    pagination_class = PublicPagination

    def get_queryset(self) -> QuerySet[Result]:
        params = self.params()
        results = _results().filter(language_model__in=self.visible_models())
        if model := params.get("model", ""):
            results = results.filter(language_model__slug=model)
        if dataset := params.get("dataset", ""):
            results = results.filter(dataset__slug=dataset)
        if slug := params.get("benchmark", ""):
            results = results.filter(benchmark_results(slug))
        return results


def benchmark_results(slug: str) -> Q:
    """The results a benchmark scores (leaderboard.score_aggregation.entry_results), as a filter; nothing if
    it is unknown."""
    benchmark = Benchmark.objects.filter(slug=slug, active=True).first()
    entries = list(benchmark.entries.all()) if benchmark is not None else []
    if not entries:
        return Q(pk__in=[])
    columns = Q()
    for entry in entries:
        columns |= Q(dataset_id=entry.dataset_id, metric_id=entry.metric_id, variant=entry.variant)
    # A paper's model counts only the numbers that paper printed; a model evaluated here, its own.
    scope = Q(language_model__origin=LanguageModel.Origin.REPORTED, scope=benchmark.slug) | Q(
        language_model__origin=LanguageModel.Origin.REPRODUCED, scope=""
    )
    return columns & scope
