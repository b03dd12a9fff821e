"""``manage.py push_results``: a Hub model's biolm results proposed to its repository's card, as a pull request.

Against the Hub stand-in (tests/hub_standin.py), which implements ``create_commit``'s routes; what the pull
request carries is read back with ``huggingface_hub``'s own card parser.
"""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from hub_standin import HubRepository, HubStandIn
from huggingface_hub import ModelCard, constants
from test_model_pages import reproduced

from registry.models import Dataset, LanguageModel

pytestmark = pytest.mark.django_db
WRITER = "hf_aliceWritesToHerRepository"
README = """---
license: apache-2.0
model-index:
- name: alice/bert
  results:
  - task: {type: text-classification}
    dataset: {name: GLUE SST-2, type: glue}
    metrics:
    - {type: accuracy, value: 0.91}
    source: {name: Alice's own evaluation, url: 'https://example.org/alice'}
---
# Alice BERT

Trained by Alice on PubMed.
"""


@pytest.fixture
def hub(settings, monkeypatch, artefact_store):
    server = HubStandIn().start()
    settings.BIOLM_HUB_ENDPOINT = server.endpoint
    settings.BIOLM_SITE_URL = "https://biolm.example.org"
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    server.tokens |= {WRITER, "hf_readOnly"}
    server.add("alice/bert", HubRepository(files={"README.md": README.encode(), "config.json": b"{}"}))
    server.writers["alice/bert"] = {WRITER}
    yield server
    server.stop()


@pytest.fixture
def model(alice) -> LanguageModel:
    return LanguageModel.objects.create(
        slug="alice-bert", name="Alice BERT", owner=alice, namespace="alice",
        address_name="alice-bert", hub_id="alice/bert", hub_commit="a" * 40,
    )  # fmt: skip


def test_the_pull_request_adds_biolm_results_to_the_card_and_keeps_its_text_and_others_results(
    hub, model, monkeypatch, capsys
):
    ner = Dataset.objects.get(slug="demo-ner")
    Dataset.objects.filter(slug="demo-ner").update(hub_dataset="acme/demo-ner", hub_task="ner")
    result = reproduced(model, ner, [70.0, 72.0, 74.0])
    monkeypatch.setenv("HF_TOKEN", WRITER)
    call_command("push_results", "alice/alice-bert")

    assert "opened " + hub.endpoint + "/alice/bert/discussions/1" in capsys.readouterr().out
    (request,) = hub.pull_requests
    assert request["repository"] == "alice/bert" and "biolm results" in request["summary"]
    assert set(request["files"]) == {"README.md", ".eval_results/acme--demo-ner.yaml"}
    card = ModelCard(request["files"]["README.md"].decode())
    assert "Trained by Alice on PubMed." in card.text and card.data.license == "apache-2.0"
    by_source = {r.source_name: r for r in card.data.eval_results}
    assert by_source["Alice's own evaluation"].metric_value == 0.91  # another source's result is kept
    ours = by_source["biolm: BLURB-mini (demo data)"]
    assert ours.metric_value == pytest.approx(72.0) and ours.dataset_type == "acme/demo-ner"
    assert ours.source_url == f"https://biolm.example.org/models/alice/alice-bert/#result-{result.pk}"
    assert WRITER not in request["summary"] + request["description"]


def test_pushing_again_replaces_biolms_values_rather_than_adding_them_twice(hub, model, monkeypatch):
    reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0])
    monkeypatch.setenv("HF_TOKEN", WRITER)
    call_command("push_results", "alice/alice-bert")
    hub.repositories["alice/bert"].files["README.md"] = hub.pull_requests[0]["files"]["README.md"]  # merged
    call_command("push_results", "alice/alice-bert")
    card = ModelCard(hub.pull_requests[1]["files"]["README.md"].decode())
    assert [r.source_name for r in card.data.eval_results].count("biolm: BLURB-mini (demo data)") == 1


@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("hf_readOnly", "needs a token with write access"),
        ("", "give a Hub token with write access to the repository in HF_TOKEN"),
    ],
)
def test_a_token_that_cannot_open_the_pull_request_is_refused_in_words(hub, model, monkeypatch, token, words):
    reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0])
    monkeypatch.setenv("HF_TOKEN", token)
    with pytest.raises(CommandError, match=words):
        call_command("push_results", "alice/alice-bert")
    assert not hub.pull_requests


def test_a_model_not_from_the_hub_or_without_results_has_nothing_to_push(hub, model, alice, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", WRITER)
    with pytest.raises(CommandError, match="no published full-protocol result"):
        call_command("push_results", "alice/alice-bert")
    LanguageModel.objects.create(slug="uploaded", name="Uploaded", owner=alice, namespace="alice",
                                 address_name="uploaded")  # fmt: skip
    with pytest.raises(CommandError, match="was not submitted by Hub id"):
        call_command("push_results", "alice/uploaded")
    with pytest.raises(CommandError, match="no model 'alice/missing'"):
        call_command("push_results", "alice/missing")
