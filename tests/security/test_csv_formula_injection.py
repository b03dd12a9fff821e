"""The leaderboard's CSV opens in a spreadsheet as data: a model's name never runs as a formula (OWASP's advice).

A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is prefixed with ``'`` and every
text cell is quoted; numbers are written unquoted, as numbers, so a negative score stays a number.
"""

from __future__ import annotations

import csv
import io

import pytest

from biolm.spreadsheet_csv import FORMULA_STARTS, csv_text
from leaderboard.models import Result, Score
from leaderboard.score_aggregation import recompute_scores
from registry.models import Benchmark, LanguageModel

pytestmark = pytest.mark.django_db

HOSTILE = '=HYPERLINK("https://evil.example","x")'
EXPORT = "/leaderboard/blurb-mini/export.csv"


def published(slug: str, name: str, value: float, **fields) -> LanguageModel:
    """A public model with a result on every BLURB-mini entry, scored."""
    benchmark = Benchmark.objects.get(slug="blurb-mini")
    model = LanguageModel.objects.create(slug=slug, name=name, parameter_count=1_000_000, **fields)
    for entry in benchmark.entries.select_related("dataset", "metric"):
        Result.objects.create(language_model=model, dataset=entry.dataset, metric=entry.metric, value=value, std=1.0,
                              n_seeds=3)  # fmt: skip
    return model


@pytest.fixture
def board(db):
    made = [
        published("evil-link", HOSTILE, 70.0),
        published("ve-control", "-ve control", 20.0, source_paper="+cmd|' /C calc'!A0"),
        published("at-sum", "@SUM(1+1)*cmd|' /C calc'!A0", 40.0),
        published("tabbed", "\t=1+1", 30.0),
        published("returned", "\r=1+1", 35.0),
        published("below-zero", "Below Zero", 10.0),
    ]
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"))
    Score.objects.filter(language_model__slug="below-zero").update(score=-0.5)  # a metric that can go negative
    return made


def rows_by_model(text: str) -> dict[str, dict]:
    return {row["model"]: row for row in csv.DictReader(io.StringIO(text))}


def test_a_published_models_formula_name_comes_out_as_quoted_text_prefixed_with_a_quote(client, board):
    text = client.get(EXPORT).content.decode()
    assert rows_by_model(text)["evil-link"]["name"] == "'" + HOSTILE
    assert '"\'=HYPERLINK(""https://evil.example"",""x"")"' in text  # quoted, its own quotes doubled
    assert ",=HYPERLINK" not in text and ',"=' not in text


def test_every_text_cell_of_the_export_is_quoted_and_none_starts_a_formula(client, board):
    text = client.get(EXPORT).content.decode()
    # QUOTE_NONNUMERIC reading: an unquoted cell that is not a number raises, so every text cell was quoted
    cells = [cell for row in csv.reader(io.StringIO(text), quoting=csv.QUOTE_NONNUMERIC) for cell in row]
    texts = [cell for cell in cells if isinstance(cell, str)]
    assert texts and not [cell for cell in texts if cell.startswith(FORMULA_STARTS)]
    names = {row["model"]: row["name"] for row in rows_by_model(text).values()}
    assert names["tabbed"] == "'\t=1+1" and names["returned"] == "'\r=1+1" and names["at-sum"].startswith("'@SUM")


def test_a_real_name_starting_with_a_minus_round_trips_after_stripping_the_documented_quote(client, board):
    row = rows_by_model(client.get(EXPORT).content.decode())["ve-control"]
    assert row["name"] == "'-ve control" and row["name"].removeprefix("'") == "-ve control"
    assert row["source"].removeprefix("'") == "+cmd|' /C calc'!A0"
    names = client.get(EXPORT.replace(".csv", ".json")).json()["rows"]
    assert "-ve control" in {r["name"] for r in names}  # the JSON export carries the name as it is


def test_a_negative_score_stays_an_unquoted_number(client, board):
    text = client.get(EXPORT).content.decode()
    (line,) = [line for line in text.splitlines() if '"below-zero"' in line]
    assert ",-0.5," in line  # unquoted: a spreadsheet reads the number, which OWASP counts safe
    (row,) = [row for row in csv.reader(io.StringIO(line), quoting=csv.QUOTE_NONNUMERIC)]
    assert -0.5 in row
    assert rows_by_model(text)["below-zero"]["score"] == "-0.5"


def test_the_helper_leaves_numbers_and_plain_text_alone_and_writes_booleans_as_words():
    assert csv_text([[-1, 2.5, None, "plain", "-x", True, False]]) == '-1,2.5,"","plain","\'-x","true","false"\r\n'
