"""The public read-only API (/api/v1/): its shapes, the page's board, pagination, ETags, privacy, schema and docs.

The leaderboard endpoint must give exactly the page's board under the same query string, and a
private model must not exist for anyone but its owner and staff: not in a list, a count, a
leaderboard row, a result, nor as a 404 different from a missing slug's. The schema at
/api/schema/ is the public API's alone, and schemathesis fuzzes every GET in it through WSGI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape as html_unescape

import pytest
import schemathesis
from django.http import QueryDict
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from leaderboard.models import Result
from leaderboard.score_aggregation import recompute_scores
from leaderboard.tables import View, leaderboard_for
from registry.models import Benchmark, LanguageModel

# The fuzzer checks answers against the schema: the same on any database (PostgreSQL pass only).
pytestmark = [pytest.mark.django_db, pytest.mark.once]
API = "/api/v1/"
SECRET = "alice-secret"
SECRET_NAME = "Alice Secret BERT"


def scored(slug: str, name: str, owner, base: float, *, private: bool = False, entries: int | None = None):
    """A model evaluated here with results on ``entries`` of BLURB's datasets (all by default), scored."""
    blurb = Benchmark.objects.get(slug="blurb")
    model = LanguageModel.objects.create(
        slug=slug,
        name=name,
        owner=owner,
        parameter_count=110_000_000,
        vocabulary="PubMed WordPiece",
        pretraining_corpus="PubMed abstracts",
        visibility=LanguageModel.Visibility.PRIVATE if private else LanguageModel.Visibility.PUBLIC,
    )
    for i, entry in enumerate(list(blurb.entries.select_related("dataset", "metric"))[:entries]):
        Result.objects.create(
            language_model=model, dataset=entry.dataset, metric=entry.metric, variant=entry.variant,
            value=base + i / 10, std=0.5, median=base + i / 10 - 0.1, n_seeds=5, source="test",
        )  # fmt: skip
    recompute_scores(blurb, [model])
    return model


@pytest.fixture
def models(alice):
    """A public model of alice's with every BLURB dataset, one missing datasets, and her private one."""
    return {
        "open": scored("alice-open", "Alice Open BERT", alice, 85.0),
        "partial": scored("alice-partial", "Alice Partial BERT", alice, 70.0, entries=2),
        "secret": scored(SECRET, SECRET_NAME, alice, 99.0, private=True),
    }


def get(client: Client, url: str, **headers):
    response = client.get(url, headers=headers)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return response.json()


def every(client: Client, url: str) -> list[dict]:
    """All the ``results`` of a paginated list, page by page."""
    found: list[dict] = []
    while url:
        page = get(client, url)
        found += page["results"]
        url = page["next"]
    return found


def board_json(user, query: str = "") -> dict:
    """What the leaderboard page renders for ``user`` under ``query``, as JSON would carry it."""
    from django.contrib.auth.models import AnonymousUser

    benchmark = Benchmark.objects.get(slug="blurb")
    visible = LanguageModel.objects.visible_to(user or AnonymousUser())
    return json.loads(json.dumps(leaderboard_for(benchmark, visible, View.from_params(QueryDict(query))).as_json()))


# --- shapes --------------------------------------------------------------------------------------------------------


def test_benchmarks_list_active_benchmarks_with_their_links_and_visible_model_counts(client, models):
    listed = {b["slug"]: b for b in get(client, f"{API}benchmarks/")}
    assert {"blurb", "lewis2020", "gatortron"} <= set(listed)
    assert set(Benchmark.objects.filter(active=True).values_list("slug", flat=True)) == set(listed)
    blurb = listed["blurb"]
    assert set(blurb) == {
        "slug", "name", "description", "citation", "aggregation_version", "n_models", "url", "leaderboard",
        "time_to_leaderboard",
    }  # fmt: skip
    nothing_yet = {"submissions": 0, "median_s": None, "p90_s": None, "gpu_hours_median": None}
    assert blurb["time_to_leaderboard"] == {"full": nothing_yet, "previews": nothing_yet}  # these were never submitted
    assert blurb["url"] == "http://testserver/leaderboard/blurb/"
    assert blurb["leaderboard"] == "http://testserver/api/v1/benchmarks/blurb/leaderboard"
    assert blurb["aggregation_version"] == Benchmark.objects.get(slug="blurb").aggregation_version
    assert blurb["n_models"] == board_json(None)["total"]
    assert client.get(f"{API}benchmarks/blurb/leaderboard").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        "",
        "origin=reported",
        "origin=reproduced&sort=model&dir=asc",
        "q=bert&sort=score",
        "size=base&domain=pubmed&vocabulary=domain",
        "start=scratch&architecture=bert",
        "pins=alice-partial,alice-secret&origin=reported",
        "sort=parameters&dir=asc&datasets=1",
        "origin=unknown-value&size=huge",  # dropped, as on the page
    ],
)
@pytest.mark.parametrize("who", ["anonymous", "alice"])
def test_the_leaderboard_endpoint_is_the_pages_board_under_the_same_filters(client, models, alice, who, query):
    user = alice if who == "alice" else None
    if user is not None:
        client.force_login(user)
    data = get(client, f"{API}benchmarks/blurb/leaderboard?{query}&page_size=1000")
    expected = board_json(user, query)
    assert data["rows"] == expected["rows"]
    assert {k: v for k, v in data.items() if k not in ("rows", "count", "next", "previous")} == {
        k: v for k, v in expected.items() if k != "rows"
    }
    assert data["count"] == len(expected["rows"]) and data["next"] is None and data["previous"] is None
    if not query:
        assert (SECRET in [r["model"] for r in data["rows"]]) is (who == "alice")


def test_the_leaderboard_row_carries_rank_tie_score_and_spread(client, models):
    rows = {r["model"]: r for r in get(client, f"{API}benchmarks/blurb/leaderboard")["rows"]}
    open_row, partial = rows["alice-open"], rows["alice-partial"]
    assert open_row["rank"] >= 1 and open_row["rank_basis"] == "point" and isinstance(open_row["tied"], bool)
    assert open_row["score"] is not None and open_row["url"] == "/models/alice/alice-open/"
    assert set(open_row["seeds"].values()) == {5} and set(open_row["std"].values()) == {0.5}
    assert partial["rank"] is None and len(partial["missing"]) == 11


def test_leaderboard_rows_are_paginated_and_the_header_stays(client, models):
    url = f"{API}benchmarks/blurb/leaderboard"
    everything = get(client, f"{url}?page_size=1000")["rows"]
    assert len(everything) > 4
    first = get(client, f"{url}?page_size=2")
    assert first["count"] == len(everything)
    assert [r["model"] for r in first["rows"]] == [r["model"] for r in everything[:2]]
    assert first["previous"] is None and "page=2" in first["next"] and "page_size=2" in first["next"]
    for key in ("benchmark", "name", "aggregation_version", "primary", "primary_label", "ranking", "view", "total"):
        assert key in first
    assert len(first["columns"]) == len(board_json(None)["columns"])
    second = get(client, first["next"])
    assert second["rows"] == everything[2:4] and second["previous"] is not None
    last_page = -(-len(everything) // 2)
    last = get(client, f"{url}?page_size=2&page={last_page}")
    assert last["next"] is None and last["rows"] == everything[2 * (last_page - 1) :]
    assert len(get(client, url)["rows"]) == min(100, len(everything))  # the default page
    assert len(get(client, f"{url}?page_size=100000")["rows"]) == min(1000, len(everything))  # capped
    past = client.get(f"{url}?page=999")
    assert past.status_code == 404 and "detail" in past.json()
    assert client.get(f"{API}benchmarks/no-such-benchmark/leaderboard").status_code == 404


def test_models_list_is_paginated_and_the_detail_is_the_model_card(client, models):
    page = get(client, f"{API}models/?page_size=3")
    assert set(page) == {"count", "next", "previous", "results"} and len(page["results"]) == 3
    assert page["count"] == LanguageModel.objects.public().count()
    listed = every(client, f"{API}models/?page_size=3")
    assert len(listed) == page["count"] == len({m["slug"] for m in listed})
    summary = next(m for m in listed if m["slug"] == "alice-open")
    assert summary["address"] == "alice/alice-open"
    assert summary["url"] == "http://testserver/api/v1/models/alice/alice-open"
    assert summary["page"] == "http://testserver/models/alice/alice-open/"
    card = get(client, summary["url"])
    for field in (
        "name", "origin", "source_paper", "architecture", "parameters", "vocabulary", "vocabulary_kind",
        "pretraining_corpus", "pretraining_domain", "initialisation", "max_sequence_length", "scores", "results",
    ):  # fmt: skip
        assert field in card, field
    assert card["parameters"] == 110_000_000 and card["origin"] == "reproduced"
    assert card["pretraining_domain"] == "pubmed" and card["vocabulary_kind"] == "domain"
    assert "checkpoint" not in card and "owner" not in card
    blurb = next(s for s in card["scores"] if s["benchmark"] == "blurb")
    page_row = next(r for r in board_json(None)["rows"] if r["model"] == "alice-open")
    assert (blurb["rank"], blurb["tied"], blurb["score"]) == (page_row["rank"], page_row["tied"], page_row["score"])
    assert blurb["leaderboard"] == "http://testserver/api/v1/benchmarks/blurb/leaderboard"
    assert len(card["results"]) == Benchmark.objects.get(slug="blurb").entries.count()
    result = card["results"][0]
    assert {"dataset", "metric", "mean", "std", "median", "n_seeds"} <= set(result) and result["n_seeds"] == 5


def test_datasets_list_and_detail_give_the_card_and_the_visible_results(client, models):
    listed = {d["slug"]: d for d in get(client, f"{API}datasets/")}
    assert "biosses" in listed and listed["biosses"]["url"] == "http://testserver/api/v1/datasets/biosses"
    card = get(client, listed["biosses"]["url"])
    assert card["metric"]["slug"] == "pearson" and card["metric"]["higher_is_better"] is True
    assert card["task_type"]["slug"] and card["splits"] and {"name", "size", "unit"} == set(card["splits"][0])
    assert "licence" in card and card["access"] in ("public", "restricted") and "blurb" in card["benchmarks"]
    ours = [r for r in card["results"] if r["model"] == "alice-open"]
    stored = Result.objects.get(language_model=models["open"], dataset__slug="biosses")
    assert len(ours) == 1 and (ours[0]["mean"], ours[0]["std"], ours[0]["n_seeds"]) == (stored.value, 0.5, 5)
    assert ours[0]["median"] == stored.median and ours[0]["metric"] == "pearson"
    assert card["n_models"] == listed["biosses"]["n_models"] == len({r["model"] for r in card["results"]})
    assert client.get(f"{API}datasets/no-such-dataset").status_code == 404


def test_results_are_paginated_and_filter_by_model_dataset_and_benchmark(client, models):
    mine = every(client, f"{API}results/?model=alice-open&page_size=5")
    assert len(mine) == Benchmark.objects.get(slug="blurb").entries.count()
    assert {r["model"] for r in mine} == {"alice-open"}
    first = Benchmark.objects.get(slug="blurb").entries.select_related("dataset").first().dataset.slug
    partial = every(client, f"{API}results/?dataset={first}&model=alice-partial")
    assert [(r["model"], r["dataset"], r["mean"]) for r in partial] == [("alice-partial", first, 70.0)]
    # A paper's model counts on a benchmark only with the numbers that benchmark's paper printed.
    reported = LanguageModel.objects.filter(origin="reported", results__scope="blurb").distinct().first()
    on_blurb = every(client, f"{API}results/?benchmark=blurb&model={reported.slug}")
    assert on_blurb and {r["scope"] for r in on_blurb} == {"blurb"}
    assert len(on_blurb) == reported.results.filter(scope="blurb").count()
    assert get(client, f"{API}results/?benchmark=no-such-benchmark")["count"] == 0
    assert get(client, f"{API}results/?model=no-such-model")["count"] == 0
    assert len(get(client, f"{API}results/")["results"]) == 100


def test_slugs_with_a_dot_and_nul_characters_are_served(client, models):
    """Spec slugs may hold a '.' (a published ``biobert-base-v1.1``); NUL would be a 500 on PostgreSQL."""
    model = LanguageModel.objects.filter(slug__contains=".", scores__benchmark__slug="bioformer").first()
    dotted = model.slug  # BioBERT-Base v1.1's dmis-lab--biobert-v1.1
    assert get(client, f"{API}models/{model.namespace}/{model.address_name}")["slug"] == dotted
    rows = get(client, f"{API}benchmarks/bioformer/leaderboard?page_size=1000")["rows"]
    assert dotted in [r["model"] for r in rows]
    assert get(client, f"{API}results/?model={dotted}")["count"] > 0
    assert get(client, f"{API}benchmarks/blurb/leaderboard?q=%00&pins=%00,alice-open&sort=%00")["rows"]
    stripped = get(client, f"{API}results/?model=alice-open%00&dataset=%00&benchmark=%00")  # NUL dropped
    assert stripped["count"] == get(client, f"{API}results/?model=alice-open")["count"] > 0


# --- privacy -------------------------------------------------------------------------------------------------------


def test_a_private_model_does_not_exist_for_anonymous_callers_and_other_users(client, models, bob):
    for user in (None, bob):
        if user is not None:
            client.force_login(user)
        listed = every(client, f"{API}models/?page_size=1000")
        assert SECRET not in {m["slug"] for m in listed}
        assert get(client, f"{API}models/?page_size=1")["count"] == LanguageModel.objects.public().count()
        hidden = client.get(f"{API}models/alice/{SECRET}")
        missing = client.get(f"{API}models/alice/no-such-model")
        assert hidden.status_code == missing.status_code == 404 and hidden.json() == missing.json()
        rows = get(client, f"{API}benchmarks/blurb/leaderboard?page_size=1000&pins={SECRET}&q=secret")["rows"]
        assert rows == [] and SECRET_NAME.encode() not in client.get(f"{API}benchmarks/blurb/leaderboard").content
        blurb = next(b for b in get(client, f"{API}benchmarks/") if b["slug"] == "blurb")
        assert blurb["n_models"] == board_json(None)["total"]
        assert get(client, f"{API}results/?model={SECRET}")["count"] == 0
        assert SECRET not in {r["model"] for r in every(client, f"{API}results/?dataset=biosses&page_size=1000")}
        biosses = get(client, f"{API}datasets/biosses")
        assert SECRET not in {r["model"] for r in biosses["results"]}
        listed_biosses = next(d for d in get(client, f"{API}datasets/") if d["slug"] == "biosses")
        assert listed_biosses["n_models"] == biosses["n_models"] == len({r["model"] for r in biosses["results"]})
        client.logout()


def test_a_private_model_is_seen_by_its_owner_and_staff(client, models, alice, staff):
    public_total = board_json(None)["total"]
    for user in (alice, staff):
        client.force_login(user)
        assert SECRET in {m["slug"] for m in every(client, f"{API}models/?page_size=1000")}
        card = get(client, f"{API}models/alice/{SECRET}")
        assert card["name"] == SECRET_NAME and card["results"]
        rows = get(client, f"{API}benchmarks/blurb/leaderboard?page_size=1000")["rows"]
        assert SECRET in [r["model"] for r in rows]
        blurb = next(b for b in get(client, f"{API}benchmarks/") if b["slug"] == "blurb")
        assert blurb["n_models"] == public_total + 1
        assert get(client, f"{API}results/?model={SECRET}")["count"] == len(card["results"])
        assert SECRET in {r["model"] for r in get(client, f"{API}datasets/biosses")["results"]}
        client.logout()


# --- conditional GET and caching -----------------------------------------------------------------------------------

ENDPOINTS = [
    "benchmarks/",
    "benchmarks/blurb/leaderboard?origin=reproduced",
    "models/",
    "models/alice/alice-open",
    "datasets/",
    "datasets/biosses",
    "results/?model=alice-open",
]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_every_endpoint_answers_if_none_match_with_a_304(client, models, path):
    first = client.get(API + path)
    etag = first["ETag"]
    assert first.status_code == 200 and re.fullmatch(r'"[0-9a-f]{64}"', etag)
    again = client.get(API + path, headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert again["Cache-Control"] == first["Cache-Control"]
    assert client.get(API + path, headers={"if-none-match": '"something-else"'}).status_code == 200
    assert client.head(API + path, headers={"if-none-match": etag}).status_code == 304


@pytest.mark.parametrize(
    "path", ["benchmarks/blurb/leaderboard", "results/?model=alice-partial", "models/alice/alice-partial"]
)
def test_a_new_result_changes_the_etag(client, models, path):
    etag = client.get(API + path)["ETag"]
    blurb = Benchmark.objects.get(slug="blurb")
    entry = blurb.entries.select_related("dataset", "metric").last()
    Result.objects.create(
        language_model=models["partial"], dataset=entry.dataset, metric=entry.metric, variant=entry.variant, value=77.0
    )
    recompute_scores(blurb, [models["partial"]])
    changed = client.get(API + path, headers={"if-none-match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_anonymous_answers_are_public_and_signed_in_ones_private(client, models, alice):
    url = f"{API}benchmarks/blurb/leaderboard"
    anonymous = client.get(url)
    assert anonymous["Cache-Control"] == "public, max-age=60"
    assert "Cookie" in anonymous["Vary"]
    client.force_login(alice)
    owner = client.get(url)
    assert "private" in owner["Cache-Control"] and "public" not in owner["Cache-Control"]
    assert "Cookie" in owner["Vary"]
    assert owner["ETag"] != anonymous["ETag"]  # her private row is in it
    assert client.get(url, headers={"if-none-match": anonymous["ETag"]}).status_code == 200
    assert "private" in client.get(f"{API}models/no-such-model")["Cache-Control"]


def test_the_api_is_read_only(models, alice):
    for signed_in in (False, True):
        client = Client(enforce_csrf_checks=True)
        if signed_in:
            client.force_login(alice)
        for path in ENDPOINTS:
            for method in ("post", "put", "patch", "delete"):
                response = getattr(client, method)(API + path, data={}, content_type="application/json")
                assert response.status_code == 405, (method, path, signed_in, response.status_code)
            assert client.options(API + path).status_code == 200
            head = client.head(API + path)
            assert head.status_code == 200 and head["ETag"]


# --- schema and docs -----------------------------------------------------------------------------------------------

READ_ONLY_PATHS = {
    "/api/v1/benchmarks/", "/api/v1/benchmarks/{slug}/leaderboard",
    "/api/v1/models/", "/api/v1/models/{namespace}/{name}",
    "/api/v1/datasets/", "/api/v1/datasets/{slug}", "/api/v1/results/",
}  # fmt: skip
SUBMISSION_PATHS = {"/api/v1/submissions", "/api/v1/submissions/{id}", "/api/v1/submissions/{id}/cancel",
                    "/api/v1/submissions/{id}/hub-token"}  # fmt: skip


def test_the_public_schema_describes_the_public_api_only(client, settings):
    schema = get(client, "/api/schema/?format=json")
    assert schema["info"]["title"] == "biolm public API" and schema["info"]["version"]
    assert "Private models" in schema["info"]["description"]
    paths = set(schema["paths"])
    assert paths == READ_ONLY_PATHS | SUBMISSION_PATHS
    assert "/internal/" not in json.dumps(schema) and "jobToken" not in json.dumps(schema)
    assert {m for path in READ_ONLY_PATHS for m in schema["paths"][path]} == {"get"}
    # Submitting: the API token (an http bearer scheme) alone, the upload as multipart, refusals and quota described.
    token = schema["components"]["securitySchemes"]["apiToken"]
    assert (token["type"], token["scheme"]) == ("http", "bearer") and "profile" in token["description"]
    operations = {(m, path): op for path in SUBMISSION_PATHS for m, op in schema["paths"][path].items()}
    assert set(operations) == {
        ("get", "/api/v1/submissions"),
        ("post", "/api/v1/submissions"),
        ("get", "/api/v1/submissions/{id}"),
        ("post", "/api/v1/submissions/{id}/cancel"),
        ("delete", "/api/v1/submissions/{id}/hub-token"),
    }
    assert all(op["security"] == [{"apiToken": []}] for op in operations.values())
    submit = operations["post", "/api/v1/submissions"]
    upload = submit["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
    fields = schema["components"]["schemas"][upload]
    assert (fields["properties"]["checkpoint"]["type"], fields["properties"]["checkpoint"]["format"]) == (
        "string", "binary"
    )  # fmt: skip
    assert {"benchmark", "licence"} <= set(fields["required"]) and "checkpoint" not in fields["required"]
    assert set(submit["responses"]) == {"200", "201", "400", "401", "413", "429"}
    assert "before the body was read" in submit["responses"]["413"]["description"]
    assert "Retry-After" in submit["responses"]["429"]["headers"]
    # The workers' components stay in their schema.
    internal_components = {"ClaimIn", "ClaimOut", "HeartbeatIn", "VerdictOut", "WorkerIn", "FailIn", "DeliveryIn"}
    assert not internal_components & set(schema["components"]["schemas"])
    leaderboard = schema["paths"]["/api/v1/benchmarks/{slug}/leaderboard"]["get"]
    documented = {p["name"] for p in leaderboard["parameters"]}
    assert {"origin", "architecture", "size", "domain", "vocabulary", "start", "q", "sort", "dir", "pins"} <= documented
    assert {"page", "page_size"} <= documented
    assert leaderboard["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/PaginatedLeaderboard"
    )
    # The workers' schema is still theirs alone, behind the worker secret.
    assert client.get("/internal/schema/").status_code == 401
    internal = client.get(
        "/internal/schema/?format=json", headers={"authorization": f"Bearer {settings.BIOLM_WORKER_SECRET}"}
    )
    assert internal.status_code == 200
    internal_schema = json.loads(internal.content)
    assert internal_schema["info"]["title"] == "biolm worker API"
    assert internal_schema["paths"] and all(p.startswith("/internal/") for p in internal_schema["paths"])
    assert internal_components <= set(internal_schema["components"]["schemas"])


def test_the_docs_page_loads_swagger_ui_from_this_site_with_no_inline_script(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    start_up = [a for a in assets if a.startswith("/api/docs/?")]
    assert len(start_up) == 1 and all(
        a.startswith(("/static/drf_spectacular_sidecar/", "/static/leaderboard/")) for a in assets if a not in start_up
    ), assets  # Swagger UI's files, and the site's stylesheet that darkens its colours
    assert not re.search(r"https?://", html), "the docs must not load anything from a CDN"
    # The Content-Security-Policy allows no inline script: every <script> has a src, the start-up one too.
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", html))
    script = client.get(html_unescape(start_up[0]))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
    for asset in assets:
        if asset not in start_up:
            served = client.get(asset)
            assert served.status_code == 200, asset
            served.close()


# --- fuzzing -------------------------------------------------------------------------------------------------------


@contextmanager
def connection_kept_open() -> Iterator[None]:
    """Calls through WSGI must not close the test transaction's connection (see tests/security/test_hostile_tokens)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def known_slugs() -> dict[str, list[str]]:
    """Real slugs for the generated requests to aim at: random ones would only ever meet 404s.

    The published ``bioformer--biobert-base-v1.1`` (a '.' in its slug) and the private model are among them.
    """
    dotted = LanguageModel.objects.filter(slug__contains=".").values_list("slug", flat=True)[:1]
    return {
        "benchmarks": sorted(Benchmark.objects.filter(active=True).values_list("slug", flat=True)),
        "models": [
            ["alice", "alice-open"],
            ["alice", "alice-partial"],
            ["alice", SECRET],
            *(["papers", d] for d in dotted),
        ],
        "datasets": ["biosses", "hoc", "ncbi-disease", "chemprot"],
        "model": ["alice-open", SECRET],
        "dataset": ["biosses", "hoc"],
        "benchmark": ["blurb", "bioformer"],
        "pins": ["alice-open,alice-secret"],
    }


def aim(case, slugs: dict[str, list[str]]) -> None:
    """Point most generated cases at real objects and a page that exists, deterministically (from the case itself).

    What stays generated (filters, search, sort, page sizes, a quarter of the slugs and pages) keeps
    fuzzing; what is replaced is still valid under the schema.
    """
    if case.path_parameters and "name" in case.path_parameters:  # a model's address, namespace/name
        generated = str(case.path_parameters["name"])
        if len(generated) % 4:
            choice = slugs["models"][len(generated) % len(slugs["models"])]
            case.path_parameters["namespace"], case.path_parameters["name"] = choice
    if case.path_parameters and "slug" in case.path_parameters:
        generated = str(case.path_parameters["slug"])
        choices = slugs[case.path.split("/")[3]]
        if len(generated) % 4:
            case.path_parameters["slug"] = choices[len(generated) % len(choices)]
    query = case.query or {}
    for name in ("model", "dataset", "benchmark", "pins"):
        if name in query and len(str(query[name])) % 2:
            query[name] = slugs[name][len(str(query[name])) % len(slugs[name])]
    if "page" in query and str(query["page"]).lstrip("-").isdigit() and int(query["page"]) % 4:
        query["page"] = 1


@pytest.mark.slow  # fuzzing; the endpoints' own tests stay fast
@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_fuzzed_requests_never_crash_the_api_and_every_answer_matches_the_schema(models, alice, who):
    """Every GET of the public schema, generated slugs, filters and pages, anonymous and as the private model's owner.

    30 derandomised examples per operation; each answer must be no 5xx, a documented status and
    content type, and a body valid under the schema.
    """
    from biolm_site.wsgi import application

    headers = {}
    if who == "owner":
        session = Client()
        session.force_login(alice)
        headers["Cookie"] = f"sessionid={session.cookies['sessionid'].value}"
    with connection_kept_open():
        schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    # The read-only API's operations; submitting needs a token (tests/test_submissions_api.py fuzzes it).
    operations = [result.ok() for result in schema.get_all_operations()]
    operations = [op for op in operations if op.path in READ_ONLY_PATHS]
    assert len(operations) == 7 and {op.method.upper() for op in operations} == {"GET"}
    slugs = known_slugs()
    statuses: list[int] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(
            max_examples=30, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
        )
        def fuzz(case):
            aim(case, slugs)
            statuses.append(case.call_and_validate(headers=headers, checks=CHECKS).status_code)

        with connection_kept_open():
            fuzz()
    assert statuses.count(200) > len(statuses) / 3, "the fuzzing should mostly reach real objects"
