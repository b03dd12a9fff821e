"""The compare page picks models by name (issue 30, deliverable 8), through the Django client.

Its search box suggests the models with a score on the benchmark that the reader may see, by name and
address, and adds the one typed (``?add=``); each compared model's button removes it (``?remove=``).
Both answer with a redirect to the page's own address, ``?models=`` updated: what a reader without
JavaScript follows, and what compare.js fetches without reloading (tests/browser/test_compare_web.py).
Another user's private model is neither suggested nor found by its name.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from web_fixture import PRIVATE_MODEL, PRIVATE_OWNER, build_web_fixture

from registry.models import LanguageModel

pytestmark = pytest.mark.django_db

COMPARE = "/compare/?benchmark=blurb-mini"


@pytest.fixture
def board(db):
    return build_web_fixture()


def test_the_search_box_suggests_each_scored_model_by_name_and_address(client, board):
    page = client.get(COMPARE).content.decode()
    assert 'list="compare-suggestions"' in page
    assert '<label for="compare-add">' in page
    assert '<option value="papers/alder-bert" label="Alder-BERT">' in page
    assert '<option value="papers/elm-longformer" label="Elm-Longformer">' in page


def test_a_typed_name_adds_the_model_and_the_address_keeps_the_models(client, board):
    response = client.get(f"{COMPARE}&models=cedar-bert&add=alder-bert")  # the internal key still works
    assert response.status_code == 302
    assert response["Location"] == "/compare/?benchmark=blurb-mini&models=cedar-bert,alder-bert"
    response = client.get(f"{COMPARE}&models=cedar-bert&add=  birch-ROBERTA ")  # a name, any case
    assert response["Location"] == "/compare/?benchmark=blurb-mini&models=cedar-bert,birch-roberta"
    response = client.get(f"{COMPARE}&models=cedar-bert&add=papers/dogwood-bert")  # an address
    assert response["Location"] == "/compare/?benchmark=blurb-mini&models=cedar-bert,dogwood-bert"
    page = client.get(response["Location"]).content.decode()
    assert 'aria-label="Remove Dogwood-BERT"' in page and "Difference to Cedar-BERT" in page


def test_a_remove_button_takes_one_model_out_and_nothing_else(client, board):
    response = client.get(f"{COMPARE}&models=cedar-bert,alder-bert,dogwood-bert&remove=alder-bert")
    assert response.status_code == 302
    assert response["Location"] == "/compare/?benchmark=blurb-mini&models=cedar-bert,dogwood-bert"
    response = client.get(f"{COMPARE}&models=cedar-bert&remove=cedar-bert&add=")
    assert response["Location"] == "/compare/?benchmark=blurb-mini"


def test_a_name_that_finds_no_model_is_said_beside_the_box_and_the_comparison_stays(client, board):
    response = client.get(f"{COMPARE}&models=cedar-bert,alder-bert&add=Nonesuch-BERT")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<span id="compare-problem" class="problem">No model named Nonesuch-BERT was found.</span>' in page
    assert 'aria-invalid="true"' in page and 'value="Nonesuch-BERT"' in page  # the typed text kept to correct
    assert 'data-url="/compare/?benchmark=blurb-mini&amp;models=cedar-bert,alder-bert"' in page
    assert "Difference to Cedar-BERT" in page


def test_a_fifth_model_is_refused_with_the_limit(client, board):
    full = "cedar-bert,alder-bert,dogwood-bert,birch-roberta"
    page = client.get(f"{COMPARE}&models={full}&add=Elm-Longformer").content.decode()
    assert "Up to 4 models can be compared: remove one first." in page


def test_two_models_sharing_a_name_are_told_apart_by_their_address(client, board):
    LanguageModel.objects.filter(slug="dogwood-bert").update(name="Cedar-BERT")
    page = client.get(f"{COMPARE}&add=cedar-bert bert").content.decode()
    assert "No model named cedar-bert bert was found." in page
    page = client.get(f"{COMPARE}&add=Cedar-BERT").content.decode()
    assert "Several models are named Cedar-BERT: pick one by its address (papers/cedar-bert, papers/dogwood-bert)." in (
        page
    )


def test_another_users_private_model_is_neither_suggested_nor_found_by_name(client, board):
    private = LanguageModel.objects.get(slug=PRIVATE_MODEL.slug)
    bob = get_user_model().objects.create_user("bob-compare", password="unused-password-1")
    client.force_login(bob)
    page = client.get(COMPARE).content.decode()
    assert PRIVATE_MODEL.name not in page and private.address not in page
    for typed in (PRIVATE_MODEL.name, private.address, private.slug):
        page = client.get(f"{COMPARE}&add={typed}").content.decode()
        assert f"No model named {typed} was found." in page
    client.force_login(get_user_model().objects.get(username=PRIVATE_OWNER))  # its owner finds it
    assert f'label="{PRIVATE_MODEL.name}"' in client.get(COMPARE).content.decode()
    response = client.get(f"{COMPARE}&add={PRIVATE_MODEL.name}")
    assert response["Location"] == f"/compare/?benchmark=blurb-mini&models={private.slug}"


def test_the_radar_names_its_axes_in_short_lines_with_room_beside_them_for_a_phone():
    from leaderboard.charts import RADAR_LINE, RADAR_SIDE_MARGIN, radar

    axes = ["Named entity recognition", "Question Answering", "Document Classification"]
    layout = radar("BLURB-mini (demo data): group scores", axes, {"m": [1.0, 2.0, 3.0]}).figure["layout"]
    angular = layout["polar"]["angularaxis"]
    assert angular["tickvals"] == axes  # the series' theta stay the names the table uses
    wrapped = ["Named<br>entity<br>recognition", "Question<br>Answering", "Document<br>Classification"]
    assert angular["ticktext"] == wrapped
    assert all(len(line) <= RADAR_LINE or " " not in line for t in angular["ticktext"] for line in t.split("<br>"))
    assert layout["margin"]["l"] == layout["margin"]["r"] == RADAR_SIDE_MARGIN
    assert layout["title"]["text"] == "BLURB-mini (demo data): group<br>scores"
