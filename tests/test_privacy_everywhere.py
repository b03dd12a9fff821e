"""A private model is invisible everywhere to everyone but its owner and staff (one rule: registry.models).

alice owns a private model with results, a score, a rank, a submission and a running job, beside the
public models of tests/web_fixture.py. Every route of the site is requested as four personas: alice
(the owner), staff, bob (another user) and an anonymous visitor. The model's own URLs are, for bob and
the anonymous visitor, the very answer a missing model's give; lists, exports and boards leave it out
for them and show it to alice and staff. Pages that show the public only (snapshots, the public queue)
name it to nobody. The routes are collected from the URL resolver, so a route added without a probe
here, or a reason it names no model, fails :func:`test_every_route_is_probed_or_said_to_name_no_model`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from contract_documents import results_document
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from web_fixture import PRIVATE_MODEL, PRIVATE_OWNER, PUBLIC_MODELS, SNAPSHOT_DATE, build_web_fixture

from accounts.tokens import create_token
from jobs import artefacts
from jobs.models import Job
from jobs.results import results_name
from leaderboard.models import Result
from leaderboard.results_dump import write_dump
from registry.imports import import_dataset
from registry.models import LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"
PREDICTED_DATASET = "demo-qa"
BENCH = "blurb-mini"  # the web fixture's board
MISSING_SLUG = "no-such-model-anywhere"
MISSING_PK = 987654
# The owner's and staff's first: a board cached for them must not be the one the others are given.
PERSONAS = ("alice", "staff", "bob", "anonymous")
SEE_IT = {"alice", "staff"}
SHOWN = PUBLIC_MODELS[0]  # a public model every list names to everyone: proof that the list was read at all

# What a route does with the private model:
OWN = "own"  # its own URL: for those who may not see it, exactly a missing one's answer
LISTS = "lists"  # lists models: the private one only for alice and staff
PUBLIC_ONLY = "public only"  # shows what the public sees, to everyone alike: the private one to nobody
PERSONAL = "personal"  # the signed-in user's own things: alice's lists it, nobody else's does
STAFF_ONLY = "staff only"  # the admin: anyone else is sent to its sign-in
NAMES_NONE = "names none"  # no model on it for anyone (a form, the schema, the workers' API)

# Routes not probed one by one, with the reason they cannot name a model.
UNPROBED_NAMESPACES = {
    "admin": "Django's admin is staff's alone: anyone else is sent to its sign-in (probed below on the language "
    "model's list and change page)",
}
UNPROBED_VIEW_MODULES = {
    "allauth.": "sign-up, sign-in, sign-out and password pages: they show the visitor's account, never a model",
    "biolm_site.favicon": "the site's icon: the same bytes for everyone, naming nothing",
}


@dataclass(frozen=True)
class World:
    """The identifiers the probes' URLs need; :func:`world` stores the rows they name."""

    slug: str = PRIVATE_MODEL.slug
    namespace: str = PRIVATE_OWNER  # the private model's address is namespace/slug
    model_pk: int = 1
    submission: int = 1
    result: int = 1
    job: int = 1
    spare_token: int = 1


@dataclass(frozen=True)
class Probe:
    route: str  # the resolver's name, "namespace:name"
    kind: str
    url: str
    missing: str = ""  # OWN: the same request for a model or submission that does not exist
    method: str = "get"
    data: dict = field(default_factory=dict)
    names: bool = True  # whether its answer, to those who may see the model, names it (a redirect does not)
    moved_to: str = ""  # a model's old URL: to those who may see the model, a permanent redirect here
    shows: str = ""  # a public model's name every persona's answer must hold


def probes(w: World) -> list[Probe]:
    """Every request made of every persona, by route."""
    url = reverse
    board, bench = url("leaderboard:benchmark", args=[BENCH]), [BENCH]
    model, missing_model = (url("leaderboard:model", args=[w.namespace, slug]) for slug in (w.slug, MISSING_SLUG))
    moved, missing_moved = (url("leaderboard:model-moved", args=[slug]) for slug in (w.slug, MISSING_SLUG))
    api_model, api_missing_model = (
        url("api:model-detail", kwargs={"namespace": w.namespace, "name": slug}) for slug in (w.slug, MISSING_SLUG)
    )
    compare = url("leaderboard:compare") + f"?benchmark={BENCH}&models={SHOWN.slug},"
    submission, missing_submission = (url("submissions:detail", args=[pk]) for pk in (w.submission, MISSING_PK))
    api_submission, api_missing = (url("submissions-api:detail", args=[pk]) for pk in (w.submission, MISSING_PK))
    everything = "?page_size=1000"
    snapshot = [BENCH, SNAPSHOT_DATE]
    return [
        Probe("leaderboard:index", NAMES_NONE, url("leaderboard:index")),
        Probe("leaderboard:how-ranks", NAMES_NONE, url("leaderboard:how-ranks")),
        Probe("leaderboard:benchmark", LISTS, board, shows=SHOWN.name),
        Probe("leaderboard:benchmark", LISTS, board + "?rows=all&datasets=1", shows=SHOWN.name),
        Probe("leaderboard:export", LISTS, url("leaderboard:export", args=[*bench, "csv"]), shows=SHOWN.name),
        Probe("leaderboard:export", LISTS, url("leaderboard:export", args=[*bench, "json"]), shows=SHOWN.name),
        Probe("leaderboard:snapshot", PUBLIC_ONLY, url("leaderboard:snapshot", args=snapshot), shows=SHOWN.name),
        Probe("leaderboard:snapshot-bibtex", PUBLIC_ONLY, url("leaderboard:snapshot-bibtex", args=snapshot)),
        Probe("leaderboard:results-latest", PUBLIC_ONLY, url("leaderboard:results-latest"), shows=SHOWN.name),
        Probe("leaderboard:results-file", PUBLIC_ONLY, url("leaderboard:results-file", args=[SNAPSHOT_DATE]),
              shows=SHOWN.name),
        Probe("leaderboard:compare", OWN, compare + w.slug, missing=compare + MISSING_SLUG, shows=SHOWN.name),
        Probe("leaderboard:model", OWN, model, missing=missing_model),
        Probe("leaderboard:predictions", OWN, f"{model}predictions/{w.result}.jsonl",
              missing=f"{missing_model}predictions/{w.result}.jsonl"),
        Probe("leaderboard:dev-examples", OWN, f"{model}dev-examples/{w.result}/",
              missing=f"{missing_model}dev-examples/{w.result}/"),
        Probe("leaderboard:model-moved", OWN, moved, missing=missing_moved, names=False, moved_to=model),
        Probe("leaderboard:predictions-moved", OWN, f"{moved}predictions/{w.result}.jsonl",
              missing=f"{missing_moved}predictions/{w.result}.jsonl", names=False,
              moved_to=f"{model}predictions/{w.result}.jsonl"),
        Probe("registry:dataset-list", NAMES_NONE, url("registry:dataset-list")),
        Probe("registry:dataset-detail", LISTS, url("registry:dataset-detail", args=["demo-ner"]), shows=SHOWN.name),
        Probe("api:benchmark-list", NAMES_NONE, url("api:benchmark-list")),
        Probe("api:benchmark-leaderboard", LISTS, url("api:benchmark-leaderboard", kwargs={"slug": BENCH}) + everything,
              shows=SHOWN.name),
        Probe("api:model-list", LISTS, url("api:model-list") + everything, shows=SHOWN.name),
        Probe("api:model-detail", OWN, api_model, missing=api_missing_model),
        Probe("api:model-moved", OWN, url("api:model-moved", kwargs={"slug": w.slug}),
              missing=url("api:model-moved", kwargs={"slug": MISSING_SLUG}), names=False, moved_to=api_model),
        Probe("api:dataset-list", NAMES_NONE, url("api:dataset-list")),
        Probe("api:dataset-detail", LISTS, url("api:dataset-detail", kwargs={"slug": "demo-ner"}), shows=SHOWN.slug),
        Probe("api:result-list", LISTS, url("api:result-list") + everything, shows=SHOWN.slug),
        Probe("api:result-list", LISTS, url("api:result-list") + f"?model={w.slug}"),
        Probe("api:schema", NAMES_NONE, url("api:schema")),
        Probe("api:docs", NAMES_NONE, url("api:docs")),
        Probe("submissions:new", NAMES_NONE, url("submissions:new")),
        Probe("submissions:detail", OWN, submission, missing=missing_submission),
        Probe("submissions:status", OWN, f"{submission}status.json", missing=f"{missing_submission}status.json",
              names=False),
        Probe("submissions:cancel", OWN, f"{submission}cancel", missing=f"{missing_submission}cancel", method="post",
              names=False),
        Probe("submissions:publish", OWN, f"{submission}publish", missing=f"{missing_submission}publish",
              method="post", data={"published": "0"}, names=False),
        Probe("submissions:forget-hub-token", OWN, f"{submission}hub-token/forget",
              missing=f"{missing_submission}hub-token/forget", method="post", names=False),
        Probe("submissions:hub-card", NAMES_NONE, url("submissions:hub-card") + "?id=acme/some-bert"),
        Probe("submissions:queue", PUBLIC_ONLY, url("submissions:queue"), shows=SHOWN.name),
        Probe("submissions-api:list", PERSONAL, url("submissions-api:list")),
        Probe("submissions-api:detail", OWN, api_submission, missing=api_missing),
        Probe("submissions-api:cancel", OWN, f"{api_submission}/cancel", missing=f"{api_missing}/cancel",
              method="post"),
        Probe("submissions-api:hub-token", OWN, f"{api_submission}/hub-token", missing=f"{api_missing}/hub-token",
              method="delete"),
        Probe("accounts:profile", PERSONAL, url("accounts:profile")),
        Probe("accounts:token-create", PERSONAL, url("accounts:token-create"), method="post",
              data={"name": "privacy probe"}),
        Probe("accounts:token-revoke", NAMES_NONE, url("accounts:token-revoke", args=[w.spare_token]), method="post"),
        Probe("admin:registry_languagemodel_changelist", STAFF_ONLY, url("admin:registry_languagemodel_changelist")),
        Probe("admin:registry_languagemodel_change", STAFF_ONLY,
              url("admin:registry_languagemodel_change", args=[w.model_pk])),
        Probe("admin-login", NAMES_NONE, url("admin-login")),  # sends on to the site's sign-in, or a 403 page
        Probe("healthz", NAMES_NONE, url("healthz")),
        # The workers' API answers the job's own token (or the worker secret) alone: no persona holds one.
        Probe("job-claim", NAMES_NONE, url("job-claim", args=[w.job]), method="post"),
        Probe("job-heartbeat", NAMES_NONE, url("job-heartbeat", args=[w.job]), method="post"),
        Probe("job-output", NAMES_NONE, url("job-output", args=[w.job, "results.json"]), method="put"),
        Probe("job-output-upload", NAMES_NONE, url("job-output-upload", args=[w.job, "results.json"]), method="post"),
        Probe("job-output-uploaded", NAMES_NONE, url("job-output-uploaded", args=[w.job, "results.json"]),
              method="post"),
        Probe("job-complete", NAMES_NONE, url("job-complete", args=[w.job]), method="post"),
        Probe("job-fail", NAMES_NONE, url("job-fail", args=[w.job]), method="post"),
        Probe("job-artefact", NAMES_NONE, url("job-artefact", args=[w.job, "model/config.json"])),
        Probe("worker-heartbeat", NAMES_NONE, url("worker-heartbeat"), method="post"),
        Probe("worker-problem", NAMES_NONE, url("worker-problem"), method="post"),
        Probe("internal-schema", NAMES_NONE, url("internal-schema")),
    ]  # fmt: skip


def site_routes(patterns=None, namespace: str = "") -> dict[str, str]:
    """Every named route of the site (``namespace:name``), with the module of its view."""
    found: dict[str, str] = {}
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            found.update(site_routes(pattern.url_patterns, inner))
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}{pattern.name}" if pattern.name else f"{namespace}<unnamed {pattern.pattern}>"
            found[name] = pattern.callback.__module__
    return found


def unprobed_reason(route: str, module: str) -> str:
    for namespace, reason in UNPROBED_NAMESPACES.items():
        if route.startswith(f"{namespace}:"):
            return reason
    return next((reason for prefix, reason in UNPROBED_VIEW_MODULES.items() if module.startswith(prefix)), "")


def test_every_route_is_probed_or_said_to_name_no_model():
    planned = probes(World())
    probed = {probe.route for probe in planned}
    left = sorted(route for route, module in site_routes().items() if route not in probed and not unprobed_reason(
        route, module))  # fmt: skip
    assert not left, f"routes no privacy probe requests and no reason exempts: {left}; add them to probes()"
    for probe in planned:  # each probe's URLs are the route it says
        for url in filter(None, (probe.url, probe.missing)):
            assert resolve(urlsplit(url).path).view_name == probe.route, (probe.route, url)
    assert len(probed) >= 40  # the site's pages, exports, both APIs, the accounts and the workers' API


# --- the world the probes request ------------------------------------------------------------------------


@pytest.fixture
def world(artefact_store, bob, staff) -> tuple[World, dict[str, Client]]:
    """The web fixture's board (alice's private model ranked first among them), her submission of it, a
    running job of it and of a public model, and its predictions on one dataset; a client per persona."""
    fixture = build_web_fixture()
    alice = fixture.owner
    private = fixture.models[PRIVATE_MODEL.slug]
    submission = Submission.objects.create(submitter=alice, language_model=private)
    submission.benchmarks.add(fixture.benchmark)
    for model in (private, fixture.models[SHOWN.slug]):
        Job.objects.create(
            language_model=model, benchmark=fixture.benchmark, dataset=fixture.benchmark.entries.first().dataset,
            kind=Job.Kind.FINETUNE, status=Job.Status.RUNNING, queue=Job.Queue.GPU, started_at=timezone.now(),
        )  # fmt: skip
    result = store_predictions(private)
    write_dump(SNAPSHOT_DATE)  # the day's file of every public result: the private model's must not be in it
    clients = {"anonymous": Client()}
    for user in (alice, bob, staff):
        _, raw = create_token(user, "privacy")
        clients[user.username] = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
        clients[user.username].force_login(user)
    spare, _ = create_token(alice, "spare")
    ids = World(model_pk=private.pk, submission=submission.pk, result=result.pk, job=result.job_id,
                spare_token=spare.pk)  # fmt: skip
    return ids, clients


def store_predictions(model: LanguageModel) -> Result:
    """The model's result on PREDICTED_DATASET, with its job's results file holding one seed's predictions."""
    import_dataset(PREDICTED_DATASET)
    test = (DEMO / PREDICTED_DATASET / "test.jsonl").read_text(encoding="utf-8")
    rows = [["yes"] for line in test.splitlines() if line.strip()]
    dev = (DEMO / PREDICTED_DATASET / "dev.jsonl").read_text(encoding="utf-8")
    dev_rows = [["yes"] for line in dev.splitlines() if line.strip()]
    result = Result.objects.select_related("job").get(language_model=model, dataset__slug=PREDICTED_DATASET)
    results = results_document(result.job.contract, {"11": None}, predictions={"11": rows},
                               dev_predictions={"11": dev_rows})  # fmt: skip
    artefacts.store_bytes(json.dumps(results).encode(), results_name(result.job_id))
    return result


# --- the probes -------------------------------------------------------------------------------------------


def request(client: Client, probe: Probe, url: str):
    return getattr(client, probe.method)(url, probe.data) if probe.data else getattr(client, probe.method)(url)


def text_of(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.get("Content-Disposition", "") + body.decode("utf-8", "replace")


def normalised(text: str, slug: str) -> str:
    """An answer with what differs between any two requests (nonces, CSRF tokens) and the slug asked for blanked."""
    text = re.sub(r'nonce="[^"]*"', 'nonce=""', text)
    text = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]*"', r'\1"', text)
    return text.replace(slug, "<slug>")


def names_model(text: str) -> bool:
    return PRIVATE_MODEL.name in text or PRIVATE_MODEL.slug in text


def check(probe: Probe, persona: str, client: Client) -> None:
    response = request(client, probe, probe.url)
    text = text_of(response)
    where = f"{probe.method.upper()} {probe.url} as {persona}"
    assert response.status_code < 500, where
    sees = persona in SEE_IT
    if probe.kind == OWN and not sees:
        missing = request(client, probe, probe.missing)
        assert response.status_code == missing.status_code, where
        assert normalised(text, PRIVATE_MODEL.slug) == normalised(text_of(missing), MISSING_SLUG), where
        assert PRIVATE_MODEL.name not in text, where
    elif probe.kind == OWN and probe.moved_to:
        assert response.status_code == 301 and urlsplit(response["Location"]).path == probe.moved_to, where
    elif probe.kind == OWN:
        assert response.status_code in ((200,) if probe.method == "get" else (200, 302)), where
        assert names_model(text) or not probe.names, where
    elif probe.kind == LISTS:
        assert response.status_code == 200, where
        assert names_model(text) == sees, where
    elif probe.kind == PERSONAL:
        assert response.status_code in ((302, 401) if persona == "anonymous" else (200, 201)), where
        assert names_model(text) == (persona == "alice"), where
    elif probe.kind == STAFF_ONLY and persona != "staff":
        assert response.status_code == 302 and "/admin/login/" in response["Location"], where
    else:  # PUBLIC_ONLY, NAMES_NONE, and the admin's answer to staff (whatever their permissions)
        assert not names_model(text), where
    if probe.shows and response.status_code == 200:
        assert probe.shows in text, f"{where}: the list shows no model at all"


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_private_model_is_seen_by_its_owner_and_staff_alone_on_every_route(world, persona):
    ids, clients = world
    for probe in probes(ids):
        check(probe, persona, clients[persona])


def test_the_four_personas_share_no_cached_board(world):
    """The boards are cached per audience (leaderboard.board_cache): alice's, read first, reaches nobody else."""
    _, clients = world
    board = reverse("leaderboard:benchmark", args=[BENCH])
    seen = {persona: names_model(text_of(clients[persona].get(board))) for persona in PERSONAS}
    assert seen == {"alice": True, "staff": True, "bob": False, "anonymous": False}


def test_the_one_model_rule_agrees_with_the_one_queryset_for_every_persona(world, django_user_model):
    ids, _ = world
    users = {name: django_user_model.objects.filter(username=name).first() for name in PERSONAS}
    for persona, user in [*users.items(), ("anonymous", AnonymousUser())]:
        visible = set(LanguageModel.objects.visible_to(user).values_list("pk", flat=True))
        for model in LanguageModel.objects.all():
            assert model.is_visible_to(user) == (model.pk in visible), (persona, model.slug)
        assert (ids.model_pk in visible) == (persona in SEE_IT), persona
    assert set(LanguageModel.objects.visible_to(None)) == set(LanguageModel.objects.public())
    assert ids.model_pk not in LanguageModel.objects.visible_to(None).values_list("pk", flat=True)
