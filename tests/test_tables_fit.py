"""Tables that fit (issue 30, deliverable 3) as the server writes them: short origin badges with the full
citation kept for tooltips and screen readers, "not tested" said once as a legend, each rank term linked to
the "How ranks and scores work" page, each row's groups folded into a disclosure for phones, and the quick
previews headed by the ranked table's group names. The widths themselves are checked in Chromium
(tests/browser/test_tables_fit_web.py).
"""

from __future__ import annotations

import re

import pytest
from test_preview_results import PREVIEW, add_preview
from web_fixture import build_web_fixture

from leaderboard.tables import short_citation

pytestmark = pytest.mark.django_db
HOW = "/how-ranks-work/"


@pytest.mark.parametrize(
    ("citation", "short"),
    [
        ("Gu et al. 2021 (PubMedBERT), Table 6", "Gu 2021, T6"),
        ("Lewis et al. 2020, appendix Table 7", "Lewis 2020, T7"),
        ("Yang et al. 2022 (GatorTron), Tables 1-2", "Yang 2022, T1-2"),
        ("Fang et al. 2023 (Bioformer), Table 3", "Fang 2023, T3"),
        ("Li et al. 2022, Table 2 (QA), Table 3 (NER), Table 4 (DC)", "Li 2022, T2, T3, T4"),
        ("Devlin et al. 2019, Section 3", "Devlin 2019"),
        ("model card of bert-base-uncased", "model card of bert-base-uncased"),
    ],
)
def test_a_citation_shortens_to_first_author_year_and_table(citation: str, short: str):
    assert short_citation(citation) == short


def visible_text(html: str) -> str:
    """The page's text as a sighted reader sees it: no tags, no attributes, no screen-reader-only spans."""
    html = re.sub(r'<span class="visually-hidden">.*?</span>', "", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_blurb_badges_are_short_with_the_full_citation_in_the_tooltip_and_for_screen_readers(client):
    page = client.get("/leaderboard/blurb/").content.decode()
    badge = re.search(r'<td class="text origin">(.*?)</td>', page, re.S).group(1)
    assert 'title="reported in Gu et al. 2021 (PubMedBERT), Table ' in badge
    assert re.search(r'<span aria-hidden="true">Gu 2021, T\d</span>', badge)
    assert '<span class="visually-hidden">reported in Gu et al. 2021 (PubMedBERT), Table ' in badge
    assert "reported in Gu et al." not in visible_text(page)


def test_not_tested_is_said_once_as_a_legend_not_in_every_row(client):
    page = client.get("/leaderboard/blurb/").content.decode()
    shown = visible_text(page)
    assert shown.count("Not tested") == 1  # every BLURB row is reported: the legend says so, once
    assert "not tested: no predictions" not in shown
    assert f'<a href="{HOW}#not-tested">Not tested</a>: every ranked row here was reported in a paper' in page
    assert 'class="untested"' not in page  # no row needs a mark when none is tested


def test_the_rank_terms_link_to_the_how_ranks_page(client):
    page = client.get("/leaderboard/blurb/").content.decode()
    terms = {"ties": "tie", "paired-bootstrap": "paired bootstrap", "aggregation-version": "aggregation version"}
    for anchor, term in terms.items():
        assert f'<a href="{HOW}#{anchor}">{term}</a>' in page, term
    assert f'<a href="{HOW}">How ranks and scores work</a>' in page
    convention = client.get("/leaderboard/gatortron/").content.decode()
    assert f'<a href="{HOW}#platform-convention">platform convention</a>' in convention


def test_the_how_ranks_page_explains_each_term_with_the_tests_settings(client):
    response = client.get(HOW)
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>How ranks and scores work</h1>" in page
    for anchor in ("ties", "paired-bootstrap", "aggregation-version", "platform-convention", "not-tested"):
        assert f'id="{anchor}"' in page, anchor
    assert "1000 times" in page and "at least 95%" in page  # biolm.significance's RESAMPLES and CONFIDENCE
    assert 'href="/leaderboard/gatortron/"' in page  # its score is the platform's convention


def test_each_row_folds_its_origin_size_and_groups_into_a_disclosure(client):
    page = client.get("/leaderboard/blurb/").content.decode()
    row = re.search(r'<tr class="[^"]*" data-model="[^"]+">.*?</tr>', page, re.S).group(0)
    folded = re.search(r'<details class="row-groups">(.*?)</details>', row, re.S).group(1)
    assert "<summary>Groups" in folded
    for group in ("NER", "Document Classification", "Question Answering"):
        assert f"<dt>{group}</dt>" in folded
    assert "<dt>Origin</dt>" in folded and "<dt>Parameters</dt>" in folded
    assert '<td class="summary primary' in row  # the score a phone keeps in sight


def test_a_board_mixing_tested_and_untested_rows_marks_the_untested_ones(client):
    from leaderboard.models import Result
    from leaderboard.score_aggregation import recompute_scores
    from registry.models import LanguageModel

    fixture = build_web_fixture()
    typed = LanguageModel.objects.create(slug="typed-in", name="Typed In")
    for entry in fixture.benchmark.entries.all():
        Result.objects.create(language_model=typed, dataset=entry.dataset, metric=entry.metric, value=1.0)
    recompute_scores(fixture.benchmark, [typed])
    page = client.get(f"/leaderboard/{fixture.benchmark.slug}/").content.decode()
    row = re.search(r'<tr class="[^"]*" data-model="typed-in">.*?</tr>', page, re.S).group(0)
    assert '<span class="untested" aria-hidden="true">°</span>' in row
    assert f'° <a href="{HOW}#not-tested">Not tested</a>: reported in a paper' in page
    assert visible_text(page).count("Not tested") == 1


def test_the_preview_table_is_headed_by_the_ranked_tables_group_names(client):
    fixture = build_web_fixture()
    add_preview(PREVIEW, fixture.benchmark)
    page = client.get(f"/leaderboard/{fixture.benchmark.slug}/").content.decode()
    ranked = page[page.index('id="board-caption"') : page.index('id="previews-heading"')]
    previews = page[page.index('id="previews-caption"') :]
    ranked_groups = re.findall(r'<th scope="col" class="group"[^>]*><a [^>]*>([^<]+)</a></th>', ranked)
    preview_groups = re.findall(r'<th scope="colgroup" colspan="\d+" class="group-head">([^<]+)</th>', previews)
    assert "Relation Extraction" in ranked_groups
    assert preview_groups == ranked_groups
