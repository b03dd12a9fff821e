"""Filters, sort, pins, exports, compare and snapshots of the readers' leaderboard, through the Django client.

The browser tests (tests/browser) drive the same pages in Chromium; these check the rules
behind them quickly: the URL holds the whole view, the exports are exactly that view, a
snapshot never changes, and compare applies the same paired test as the ranks.
"""

from __future__ import annotations

import csv
import datetime
import io
import zlib

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from biolm.significance import resample_indices
from leaderboard.models import Result, Snapshot
from leaderboard.resamples import store_result_resamples
from leaderboard.score_aggregation import recompute_scores
from leaderboard.tables import View
from registry.models import Architecture, Benchmark, LanguageModel

pytestmark = pytest.mark.django_db


def reproduced(slug: str, skill: float, *, parameters: int, missing: tuple[str, ...] = (), **fields) -> LanguageModel:
    """A model with a result and a bootstrap vector on every BLURB-mini entry but ``missing``."""
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    model = LanguageModel.objects.create(slug=slug, name=slug.replace("-", " ").title(), parameter_count=parameters,
                                         **fields)  # fmt: skip
    generator = np.random.default_rng(zlib.crc32(slug.encode()))
    for entry in benchmark.entries.select_related("dataset", "metric"):
        if entry.dataset.slug in missing:
            continue
        known = (generator.random(40) < skill).astype(float)
        result = Result.objects.create(
            language_model=model, dataset=entry.dataset, metric=entry.metric, value=100 * known.mean(), std=1.5,
            n_seeds=5,
        )  # fmt: skip
        store_result_resamples(
            result, entry.dataset.slug, 100 * known[resample_indices(entry.dataset.slug, 40)].mean(1)
        )
    return model


@pytest.fixture
def models(db):
    bert = Architecture.objects.get(slug="bert")
    made = [
        reproduced("small-clinical", 0.55, parameters=20_000_000, pretraining_corpus="MIMIC-III notes, from scratch",
                   architecture=bert),
        reproduced("base-pubmed", 0.75, parameters=110_000_000, pretraining_corpus="PubMed abstracts, from scratch",
                   architecture=bert),
        reproduced("large-general", 0.95, parameters=340_000_000, pretraining_corpus="Wikipedia and books"),
        reproduced("partial-one", 0.9, parameters=110_000_000, missing=("demo-ner",)),
    ]  # fmt: skip
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"))
    return made


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_url_holds_filters_search_sort_and_pins_and_drops_what_it_does_not_know():
    view = View.from_params({"size": "base", "domain": "pubmed", "q": "bert", "sort": "score", "dir": "asc",
                             "pins": "a,b,a", "origin": "nonsense"})  # fmt: skip
    assert (view.size, view.domain, view.q, view.sort, view.desc, view.pins, view.origin) == (
        "base", "pubmed", "bert", "score", False, ("a", "b"), "",
    )  # fmt: skip
    assert View.from_params(dict(view.params())) == view  # a reload restores the same view
    assert View().query() == "?" and "sort" not in View().params()


def test_filters_keep_only_the_matching_models_and_count_the_rest(client, models):
    page = client.get("/leaderboard/blurb-mini/?size=base").content.decode()
    assert 'data-model="base-pubmed"' in page and 'data-model="partial-one"' in page
    assert 'data-model="small-clinical"' not in page and 'data-model="large-general"' not in page
    assert "Showing 2 of 4 models" in page
    assert 'data-model="small-clinical"' in client.get("/leaderboard/blurb-mini/?domain=clinical").content.decode()
    assert "No model matches these filters" in client.get("/leaderboard/blurb-mini/?q=zzz").content.decode()


def test_sorting_by_a_column_orders_rows_and_announces_the_direction(client, models):
    page = client.get("/leaderboard/blurb-mini/?sort=parameters&dir=asc").content.decode()
    assert page.index('data-model="small-clinical"') < page.index('data-model="base-pubmed"')
    assert page.index('data-model="base-pubmed"') < page.index('data-model="large-general"')
    assert '<th scope="col" class="params" aria-sort="ascending"><a href="?sort=parameters">Parameters</a>' in page
    assert page.index('data-model="partial-one"') > page.index('data-model="large-general"')  # unranked stay last
    default = client.get("/leaderboard/blurb-mini/").content.decode()
    assert '<th scope="col" class="rank" aria-sort="ascending"><a href="?sort=rank&amp;dir=asc">Rank</a>' in default


def test_pinned_models_come_first_and_lead_to_compare(client, models):
    page = client.get("/leaderboard/blurb-mini/?pins=small-clinical,base-pubmed").content.decode()
    body = page[page.index("<tbody>") :]
    assert body.index('data-model="small-clinical"') < body.index('data-model="large-general"')
    assert "/compare/?benchmark=blurb-mini&amp;models=small-clinical,base-pubmed" in page


def test_the_csv_and_json_exports_are_exactly_the_filtered_view(client, models):
    rows = csv_rows(client.get("/leaderboard/blurb-mini/export.csv?size=base&sort=score").content.decode())
    assert [r["model"] for r in rows] == ["base-pubmed", "partial-one"]
    assert rows[1]["rank"] == "" and rows[1]["missing"] == "demo-ner"
    assert rows[0]["demo-ner_std"] == "1.5" and float(rows[0]["demo-ner"]) > 0
    data = client.get("/leaderboard/blurb-mini/export.json?size=base&sort=score").json()
    assert [r["model"] for r in data["rows"]] == ["base-pubmed", "partial-one"]
    assert data["view"] == {"size": "base", "sort": "score"}
    assert client.get("/leaderboard/blurb-mini/export.xml").status_code == 404


def test_a_missing_value_is_a_dash_never_a_zero(client, models):
    page = client.get("/leaderboard/blurb-mini/?datasets=1").content.decode()
    row = page[page.index('data-model="partial-one"') :]
    row = row[: row.index("</tr>")]
    assert 'title="Demo NER' in row or "no result" in row
    assert "—" in row and ">0.00<" not in row


def test_compare_marks_each_dataset_difference_by_the_paired_test(client, models):
    page = client.get("/compare/?benchmark=blurb-mini&models=large-general,small-clinical,nobody").content.decode()
    assert "Not found: nobody." in page
    assert page.count('class="diff worse"') >= 4  # 0.55 against 0.95 on 40 examples: clearly worse
    assert "js-plotly-plot" not in page and 'class="chart"' in page  # the radar, drawn by plotly.js in the browser


def test_a_snapshot_is_dated_immutable_and_public_only(client, models, alice):
    secret = reproduced("alice-secret", 0.99, parameters=1, owner=alice, visibility=LanguageModel.Visibility.PRIVATE)
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"), [secret])
    call_command("snapshot", "--benchmark", "blurb-mini", "--date", "2026-11-25")
    snapshot = Snapshot.objects.get(benchmark__slug="blurb-mini", date=datetime.date(2026, 11, 25))
    assert {r["model"] for r in snapshot.board["rows"]} == {m.slug for m in models}
    before = client.get("/leaderboard/blurb-mini/2026-11-25/").content.decode()
    reproduced("latecomer", 0.99, parameters=1)
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"))
    after = client.get("/leaderboard/blurb-mini/2026-11-25/").content.decode()
    assert before == after and "latecomer" not in after and "alice-secret" not in after
    assert "/leaderboard/blurb-mini/2026-11-25/" in client.get("/leaderboard/blurb-mini/").content.decode()
    with pytest.raises(CommandError, match="already has a snapshot dated 2026-11-25"):
        call_command("snapshot", "--benchmark", "blurb-mini", "--date", "2026-11-25")
    with pytest.raises(ValueError, match="immutable"):
        snapshot.save()
    bibtex = client.get("/leaderboard/blurb-mini/2026-11-25/citation.bib").content.decode()
    assert (
        bibtex.startswith("@misc{biolm-blurb-mini-2026-11-25,")
        and "http://testserver/leaderboard/blurb-mini/2026-11-25/" in bibtex
    )
    assert f"Aggregation version {snapshot.aggregation_version}" in bibtex


def test_the_admin_action_takes_a_snapshot(client, models, staff):
    client.force_login(staff)
    staff.is_superuser = True
    staff.save()
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    response = client.post("/admin/registry/benchmark/", {"action": "snapshot_leaderboards",
                                                          "_selected_action": [benchmark.pk]}, follow=True)  # fmt: skip
    assert response.status_code == 200
    assert Snapshot.objects.filter(benchmark=benchmark, date=datetime.date.today()).exists()
