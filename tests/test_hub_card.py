"""A model's results in the Hugging Face Hub's own forms, read back by ``huggingface_hub``'s own parsers."""

from __future__ import annotations

import html
import re

import pytest
import yaml
from huggingface_hub import ModelCard, metadata_load, parse_eval_result_entries
from test_model_pages import reproduced

from leaderboard.models import Result
from registry.models import Dataset, LanguageModel

pytestmark = pytest.mark.django_db

PAGE = "/models/alice/alice-bert/"


@pytest.fixture(autouse=True)
def store(artefact_store):
    return artefact_store


@pytest.fixture
def model(alice) -> LanguageModel:
    return LanguageModel.objects.create(slug="alice-bert", name="Alice BERT", owner=alice, checkpoint="alice/bert")


def block_on(page: str, element_id: str) -> str:
    found = re.search(rf'<pre[^>]*id="{element_id}"[^>]*><code>(.*?)</code></pre>', page, re.S)
    assert found, f"no #{element_id} on the page"
    return html.unescape(found.group(1))


def test_the_model_card_block_reads_back_with_the_hubs_parser_with_each_results_value_and_provenance(
    client, model, tmp_path
):
    ner, relation = Dataset.objects.get(slug="demo-ner"), Dataset.objects.get(slug="demo-relation")
    on_ner = reproduced(model, ner, [70.0, 72.0, 74.0])
    on_relation = reproduced(model, relation, [55.5])
    preview = reproduced(model, Dataset.objects.get(slug="demo-similarity"), [40.0])
    Result.objects.filter(pk=preview.pk).update(preview=True)  # not the benchmark's protocol: not in the card
    page = client.get(PAGE).content.decode()
    assert "Copy for your model card" in page and "leaderboard/copy." in page

    readme = tmp_path / "README.md"
    readme.write_text(block_on(page, "card-header") + "\n# Alice BERT\n")
    card = ModelCard.load(readme)
    assert metadata_load(readme)["model-index"][0]["name"] == "alice/bert"  # its Hub id: the card's repository
    found = {(r.dataset_name, r.metric_type): r for r in card.data.eval_results}
    assert set(found) == {(ner.name, ner.metric.slug), (relation.name, relation.metric.slug)}
    first = found[(ner.name, ner.metric.slug)]
    assert first.metric_value == pytest.approx(72.0)
    assert first.task_type == "token-classification" and first.dataset_split == "test"
    assert first.source_url == f"http://testserver{PAGE}#result-{on_ner.pk}"
    assert first.metric_args["biolm_model"] == "alice/alice-bert"
    assert first.metric_args["benchmark"] == "blurb-mini"
    assert first.metric_args["benchmark_plugin_version"]  # the version the job pinned
    assert first.metric_args["aggregation_version"]
    assert first.metric_args["protocol"] == "blurb" and first.metric_args["runs"] == 3
    assert found[(relation.name, relation.metric.slug)].metric_value == pytest.approx(on_relation.value)


def test_the_api_gives_the_same_block_and_a_model_without_results_has_none(client, model, bob):
    reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0, 72.0])
    answer = client.get("/api/v1/models/alice/alice-bert").json()
    assert answer["model_index"] == block_on(client.get(PAGE).content.decode(), "card-header")
    assert answer["model_index"].startswith("---\n") and "model-index" in answer["model_index"]
    LanguageModel.objects.create(slug="bob-bert", name="Bob BERT", owner=bob)
    empty = client.get("/api/v1/models/bob/bob-bert").json()
    assert empty["model_index"] == "" and empty["hub_eval_results"] == {}
    assert "For your model card" not in client.get("/models/bob/bob-bert/").content.decode()


def test_a_dataset_the_hub_holds_also_gets_the_hubs_evaluation_results_file(client, model):
    Dataset.objects.filter(slug="demo-ner").update(hub_dataset="acme/demo-ner-on-the-hub", hub_task="ner")
    result = reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0, 74.0])
    reproduced(model, Dataset.objects.get(slug="demo-relation"), [50.0])  # no Hub id: no file
    files = client.get("/api/v1/models/alice/alice-bert").json()["hub_eval_results"]
    assert list(files) == [".eval_results/acme--demo-ner-on-the-hub.yaml"]
    (entry,) = parse_eval_result_entries(yaml.safe_load(files[".eval_results/acme--demo-ner-on-the-hub.yaml"]))
    assert (entry.dataset_id, entry.task_id, entry.value) == ("acme/demo-ner-on-the-hub", "ner", 72.0)
    assert entry.source_url.endswith(f"{PAGE}#result-{result.pk}")
    page = client.get(PAGE).content.decode()
    assert block_on(page, "eval-results-file-1") == files[".eval_results/acme--demo-ner-on-the-hub.yaml"]


def test_the_built_in_blurb_datasets_the_hub_holds_name_it():
    held = set(Dataset.objects.filter(hub_dataset="EMBO/BLURB").values_list("slug", flat=True))
    assert held == {"bc5-chem", "bc5-disease", "ncbi-disease", "bc2gm", "jnlpba", "biosses", "pubmedqa"}
