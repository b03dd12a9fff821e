"""Quick-preview results (one grid point, one seed) are marked as such and never ranked beside full ones.

A quick preview's aggregate job records its result with ``preview`` set, the model's score on the
benchmark inherits the mark, and ranking leaves it out: no rank, no part in another model's paired
test, so every full-protocol rank and interval is what it would be without it. A full-protocol
result replaces a preview one; a preview never replaces a full one. The leaderboard page lists
previews in their own table below the board; the exports, the API and the model and compare pages
say "preview"; a citable snapshot leaves them out.
"""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

import numpy as np
import pytest
from contract_documents import finetune_spec, results_document, score_spec
from django.db import transaction
from web_fixture import (
    PUBLIC_MODELS,
    WebModel,
    build_web_fixture,
    correctness_of,
    paper_test_size,
    resampled_accuracy,
)

from jobs import artefacts
from jobs.models import Job
from jobs.results import results_name
from leaderboard import recording
from leaderboard.models import Ranking, Result, Score
from leaderboard.resamples import store_result_resamples
from leaderboard.score_aggregation import recompute_scores
from leaderboard.snapshots import take_snapshot
from registry.models import Benchmark, LanguageModel

pytestmark = pytest.mark.django_db
BENCHMARK = "blurb-mini"
RANK_FIELDS = ("rank", "rank_tied", "rank_basis", "rank_interval")


@pytest.fixture(autouse=True)
def store(artefact_store):
    """Every test gets its own artefact store (the fine-tuning jobs' results files)."""
    return artefact_store


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """``with commit():`` runs the on-commit callbacks (the rescoring signal) as a real commit would."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def blurb_mini() -> Benchmark:
    return Benchmark.objects.get(slug=BENCHMARK)


def aggregate_job(model: LanguageModel, entry, seeds: list[float], *, preview: bool) -> Job:
    """A fine-tuning job whose results file holds one test run per seed, and its score job, as
    jobs.graph queues them (``preview`` in both specs of a quick preview)."""
    spec = finetune_spec(entry.dataset.slug, BENCHMARK, preview=preview)
    finetune = Job.objects.create(
        language_model=model, dataset=entry.dataset, benchmark=entry.benchmark, kind=Job.Kind.FINETUNE,
        status=Job.Status.SUCCEEDED, attempts=1, spec=spec.to_json(),
    )  # fmt: skip
    results = results_document(spec, seeds, withheld=False)
    artefacts.store_bytes(json.dumps(results).encode(), results_name(finetune.pk))
    return Job.objects.create(
        language_model=model, dataset=entry.dataset, benchmark=entry.benchmark, kind=Job.Kind.SCORE,
        spec=score_spec(spec, finetune.pk, entry.metric.slug, entry.variant).to_json(),
    )  # fmt: skip


def record(commit, model, entry, seeds, *, preview: bool) -> tuple[Job, Result | None]:
    aggregate = aggregate_job(model, entry, seeds, preview=preview)
    with commit(), transaction.atomic():
        return aggregate, recording.record(aggregate)


def test_a_quick_previews_aggregate_records_a_result_and_score_marked_preview(alice, blurb_mini, commit):
    model = LanguageModel.objects.create(slug="quick-one", name="Quick One", owner=alice)
    entry = blurb_mini.entries.select_related("dataset", "metric").order_by("position").first()
    aggregate, result = record(commit, model, entry, [71.0], preview=True)
    assert result.preview and result.n_seeds == 1 and result.value == pytest.approx(71.0)
    score = Score.objects.get(language_model=model, benchmark=blurb_mini)
    assert score.preview and score.rank is None
    assert "quick preview" in recording.outcome(aggregate, result)


def test_a_full_result_replaces_a_preview_and_clears_the_mark(alice, blurb_mini, commit):
    model = LanguageModel.objects.create(slug="quick-then-full", name="Quick then full", owner=alice)
    entries = list(blurb_mini.entries.select_related("dataset", "metric").order_by("position"))
    record(commit, model, entries[0], [90.0], preview=True)
    for entry in entries[1:]:
        record(commit, model, entry, [70.0, 72.0, 74.0], preview=False)
    assert Score.objects.get(language_model=model, benchmark=blurb_mini).preview  # one preview entry marks it
    _, result = record(commit, model, entries[0], [60.0, 62.0, 64.0], preview=False)
    (stored,) = Result.objects.filter(language_model=model, dataset=entries[0].dataset)
    assert stored.pk == result.pk and not stored.preview
    assert stored.value == pytest.approx(62.0) and stored.n_seeds == 3
    score = Score.objects.get(language_model=model, benchmark=blurb_mini)
    assert not score.preview and score.rank == 1  # complete, full-protocol, alone: ranked


def test_a_preview_never_replaces_a_full_result_and_its_job_still_succeeds(alice, blurb_mini, commit):
    model = LanguageModel.objects.create(slug="full-then-quick", name="Full then quick", owner=alice)
    entry = blurb_mini.entries.select_related("dataset", "metric").order_by("position").first()
    _, full = record(commit, model, entry, [70.0, 72.0, 74.0], preview=False)
    aggregate, returned = record(commit, model, entry, [99.0], preview=True)
    (stored,) = Result.objects.filter(language_model=model, dataset=entry.dataset)
    assert stored.pk == full.pk == returned.pk
    assert not stored.preview and stored.value == pytest.approx(72.0) and stored.job_id == full.job_id
    assert not Score.objects.get(language_model=model, benchmark=blurb_mini).preview
    assert aggregate.spec["finetune_job"] in set(stored.language_model.runs.values_list("job_id", flat=True))
    assert "the full-protocol result" in recording.outcome(aggregate, returned)


# --- ranks ---------------------------------------------------------------------------------------------------------

PREVIEW = WebModel("quick-yew", "Quick Yew-BERT", 30_000_000, 0.99, "bert", "pubmed", "domain", "scratch", 300.0,
                   "")  # fmt: skip
PARTIAL_PREVIEW = WebModel("quick-rowan", "Quick Rowan-BERT", 40_000_000, 0.97, "bert", "general", "general",
                           "scratch", 300.0, "")  # fmt: skip
PREVIEW_DATASETS = 2  # the partial preview ran two of the benchmark's datasets


def add_preview(spec: WebModel, benchmark: Benchmark, datasets: int | None = None, owner=None) -> LanguageModel:
    """A model with quick-preview results (with bootstrap vectors, as a previewed job with predictions leaves)."""
    model = LanguageModel.objects.create(
        slug=spec.slug, name=spec.name, parameter_count=spec.parameters, owner=owner,
        visibility=LanguageModel.Visibility.PRIVATE if owner else LanguageModel.Visibility.PUBLIC,
    )  # fmt: skip
    entries = list(benchmark.entries.select_related("dataset", "metric").order_by("position"))[:datasets]
    for entry in entries:
        correct = correctness_of(spec, entry.dataset.slug, paper_test_size(entry.dataset))
        result = Result.objects.create(
            language_model=model, dataset=entry.dataset, metric=entry.metric, variant=entry.variant,
            value=100.0 * float(correct.mean()), std=0.0, median=100.0 * float(correct.mean()), n_seeds=1,
            source="job (one grid point, one seed)", preview=True,
        )  # fmt: skip
        store_result_resamples(result, entry.dataset.slug, resampled_accuracy(correct, entry.dataset.slug))
    recompute_scores(benchmark, [model])
    return model


@pytest.fixture
def board():
    """tests/web_fixture.py's board with its known ranks, then a public quick preview better than every model,
    a preview of two datasets only, and a private preview; returns the fixture and the ranks before the previews."""
    fixture = build_web_fixture()
    benchmark = fixture.benchmark
    before = {
        s.language_model.slug: tuple(getattr(s, f) for f in RANK_FIELDS)
        for s in Score.objects.filter(benchmark=benchmark).select_related("language_model")
    }
    ranked_before = Ranking.objects.get(benchmark=benchmark).models_ranked
    add_preview(PREVIEW, benchmark)
    add_preview(PARTIAL_PREVIEW, benchmark, datasets=PREVIEW_DATASETS)
    add_preview(WebModel("alice-quick", "Alice Quick", 1, 0.99, "bert", "", "", "", 1.0, ""), benchmark,
                owner=fixture.owner)  # fmt: skip
    return fixture, before, ranked_before


def test_previews_are_never_ranked_and_every_full_rank_and_interval_stays_as_it_was(board):
    fixture, before, ranked_before = board
    scores = {s.language_model.slug: s for s in Score.objects.filter(benchmark=fixture.benchmark)
              .select_related("language_model")}  # fmt: skip
    for slug in (PREVIEW.slug, PARTIAL_PREVIEW.slug, "alice-quick"):
        assert scores[slug].preview and scores[slug].rank is None and scores[slug].rank_interval is None, slug
    assert scores[PREVIEW.slug].score > max(s.score for s in scores.values() if not s.preview and s.score)
    after = {slug: tuple(getattr(s, f) for f in RANK_FIELDS) for slug, s in scores.items() if not s.preview}
    assert after == before  # the best score on the board, yet no full-protocol rank, tie or interval moved
    assert [scores[m.slug].rank for m in PUBLIC_MODELS] == [1, 2, 3, 3, None]
    assert Ranking.objects.get(benchmark=fixture.benchmark).models_ranked == ranked_before


class Tables(HTMLParser):
    """The models (``data-model``) of each table's body rows, by the table's caption id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[str]] = {}
        self.current: list[str] | None = None
        self.cells: dict[str, list[str]] = {}
        self.row: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        attrs = dict(attrs)
        if tag == "table":
            self.current = []
        elif tag == "caption" and self.current is not None:
            self.tables[attrs.get("id", "")] = self.current
        elif tag == "tr" and self.current is not None and "data-model" in attrs:
            self.row = attrs["data-model"]
            self.current.append(self.row)
            self.cells[self.row] = []

    def handle_endtag(self, tag) -> None:
        if tag == "table":
            self.current = None
        elif tag == "tr":
            self.row = None
        elif tag in ("td", "th") and self.row is not None:
            self.cells[self.row].append(" ".join("".join(self.text).split()))
        if tag in ("td", "th"):
            self.text = []

    def handle_data(self, data) -> None:
        if self.row is not None:
            self.text.append(data)


def tables(page: str) -> Tables:
    parser = Tables()
    parser.feed(page)
    return parser


def test_the_leaderboard_lists_previews_in_their_own_table_below_the_ranked_one(client, board):
    fixture, _, _ = board
    page = client.get(f"/leaderboard/{BENCHMARK}/").content.decode()
    parsed = tables(page)
    ranked, previews = parsed.tables["board-caption"], parsed.tables["previews-caption"]
    assert ranked == [m.slug for m in PUBLIC_MODELS]  # the full-protocol board as it was, previews nowhere in it
    assert previews == [PREVIEW.slug, PARTIAL_PREVIEW.slug]  # the private one is its owner's alone
    assert "Quick previews: one grid point and one seed each, not ranked" in page
    assert page.index('id="board-caption"') < page.index('id="previews-heading"') < page.index('id="previews-caption"')
    yew = parsed.cells[PREVIEW.slug]
    assert "preview" in yew[0] and "—" not in yew  # per-dataset numbers, every one run, and no rank
    # The partial preview: its two datasets' numbers, "—" for the rest, and what it did not run.
    rowan = parsed.cells[PARTIAL_PREVIEW.slug]
    entries = list(fixture.benchmark.entries.select_related("dataset").order_by("position"))
    numbers = rowan[-len(entries) :]
    assert all(n != "—" for n in numbers[:PREVIEW_DATASETS]) and set(numbers[PREVIEW_DATASETS:]) == {"—"}
    assert "not run:" in rowan[0]
    assert "±" not in " ".join(yew + rowan)  # one seed: no spread to print
    assert "2 of them quick previews (not ranked)" in page


def test_the_owner_sees_their_private_preview_among_the_previews_not_the_ranks(client, board):
    fixture, _, _ = board
    client.force_login(fixture.owner)
    parsed = tables(client.get(f"/leaderboard/{BENCHMARK}/").content.decode())
    assert "alice-quick" in parsed.tables["previews-caption"]
    assert "alice-quick" not in parsed.tables["board-caption"]


def test_a_new_preview_result_shows_on_a_cached_leaderboard(client, blurb_mini, alice, commit):
    """The board's cache is keyed by the stored scores' and ranks' times: a preview rescores, so it moves the key."""
    first = tables(client.get(f"/leaderboard/{BENCHMARK}/").content.decode())
    assert "cached-quick" not in first.tables.get("previews-caption", [])
    model = LanguageModel.objects.create(slug="cached-quick", name="Cached Quick")
    entry = blurb_mini.entries.select_related("dataset", "metric").order_by("position").first()
    record(commit, model, entry, [66.0], preview=True)
    again = tables(client.get(f"/leaderboard/{BENCHMARK}/").content.decode())
    assert again.tables["previews-caption"] == ["cached-quick"]


def test_the_exports_and_the_api_mark_previews_with_a_null_rank(client, board):
    data = client.get(f"/leaderboard/{BENCHMARK}/export.json").json()
    rows = {row["model"]: row for row in data["rows"]}
    assert rows[PREVIEW.slug]["preview"] is True and rows[PREVIEW.slug]["rank"] is None
    assert "quick preview" in rows[PREVIEW.slug]["rank_note"]
    assert all(rows[m.slug]["preview"] is False for m in PUBLIC_MODELS)
    assert [r["model"] for r in data["rows"]][-2:] == [PREVIEW.slug, PARTIAL_PREVIEW.slug]  # after every full row

    lines = list(csv.DictReader(io.StringIO(client.get(f"/leaderboard/{BENCHMARK}/export.csv").content.decode())))
    by_model = {line["model"]: line for line in lines}
    assert by_model[PREVIEW.slug]["preview"] == "true" and by_model[PREVIEW.slug]["rank"] == ""
    assert by_model["alder-bert"]["preview"] == "false" and by_model["alder-bert"]["rank"] == "1"

    api = client.get(f"/api/v1/benchmarks/{BENCHMARK}/leaderboard?page_size=1000").json()
    assert {r["model"]: (r["rank"], r["preview"]) for r in api["rows"]} == {
        slug: (row["rank"], row["preview"]) for slug, row in rows.items()
    }
    card = client.get(f"/api/v1/models/papers/{PREVIEW.slug}").json()
    (score,) = [s for s in card["scores"] if s["benchmark"] == BENCHMARK]
    assert score["preview"] is True and score["rank"] is None
    assert card["results"] and all(r["preview"] for r in card["results"])
    full = client.get("/api/v1/models/papers/alder-bert").json()
    assert not any(r["preview"] for r in full["results"]) and full["scores"][0]["preview"] is False


def test_the_model_page_labels_a_previews_score_and_results(client, board):
    page = client.get(f"/models/papers/{PREVIEW.slug}/").content.decode()
    assert page.count("quick preview (not ranked)") >= 1 + 6  # the benchmark score, then each dataset's result
    assert "at one hyperparameter point with one seed" in page  # each result says what a preview skipped
    full = client.get("/models/papers/alder-bert/").content.decode()
    assert "quick preview (not ranked)" not in full


def test_the_compare_page_labels_a_preview_beside_full_models(client, board):
    page = client.get(f"/compare/?benchmark={BENCHMARK}&models=alder-bert,{PREVIEW.slug}").content.decode()
    assert "quick preview (not ranked)" in page
    assert 'class="badge preview"' in page and "not a ranking" in page
    plain = client.get(f"/compare/?benchmark={BENCHMARK}&models=alder-bert,birch-roberta").content.decode()
    assert "badge preview" not in plain


def test_a_citable_snapshot_leaves_previews_out(board):
    fixture, _, _ = board
    import datetime

    snapshot = take_snapshot(fixture.benchmark, datetime.date(2026, 2, 1), by="tests")
    models = [row["model"] for row in snapshot.board["rows"]]
    assert models == [m.slug for m in PUBLIC_MODELS]
    assert not any(row["preview"] for row in snapshot.board["rows"])


def test_the_leaderboard_command_marks_previews(board, capsys):
    from django.core.management import call_command

    call_command("leaderboard", "--benchmark", BENCHMARK)
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if PREVIEW.name in line]
    assert "quick preview" in line and line.lstrip().startswith("-")


def test_preview_vectors_are_stored_but_never_compared(board):
    """A preview keeps its bootstrap vector (the compare page may test it), yet ranking reads none of it."""
    fixture, _, _ = board
    score = Score.objects.get(benchmark=fixture.benchmark, language_model__slug=PREVIEW.slug)
    assert hasattr(score, "resamples") and np.isfinite(np.frombuffer(bytes(score.resamples.values))).all()
