"""Every dev example inspectable: the viewer pairs the stored dev predictions with the dev split's gold.

Results are recorded as ``leaderboard.recording`` records them (tests/test_model_pages.py's ``reproduced``),
with a results document holding dev predictions (version 2) or not (version 1, before they were kept).
"""

from __future__ import annotations

import html
import json
import re

import pytest
from test_model_pages import reproduced

from jobs import artefacts, exports
from leaderboard.dev_examples import entity_spans, examples
from registry.models import Dataset, LanguageModel

pytestmark = pytest.mark.django_db
MODEL = "/models/alice/alice-bert/"


@pytest.fixture(autouse=True)
def store(artefact_store):
    return artefact_store


@pytest.fixture
def model(alice) -> LanguageModel:
    return LanguageModel.objects.create(slug="alice-bert", name="Alice BERT", owner=alice, namespace="alice",
                                        address_name="alice-bert")  # fmt: skip


def split(dataset: Dataset, name: str) -> list[dict]:
    prefix, _ = exports.dataset_artefacts(dataset)
    with artefacts.storage().open(f"{prefix}/{name}.jsonl", "rb") as handle:
        return [json.loads(line) for line in handle.read().decode().splitlines() if line.strip()]


def text_of(page) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.content.decode()))


def viewer(result) -> str:
    return f"{MODEL}dev-examples/{result.pk}/"


def test_bio_and_bioes_tags_give_the_same_entities():
    assert entity_spans(["B-Chemical", "I-Chemical", "O", "B-Disease"]) == {(0, 2, "Chemical"), (3, 4, "Disease")}
    assert entity_spans(["B-Chemical", "E-Chemical", "O", "S-Disease"]) == {(0, 2, "Chemical"), (3, 4, "Disease")}
    assert entity_spans(["I-Gene", "I-Gene", "O"]) == {(0, 2, "Gene")}  # IOB1: an entity may open with I
    assert entity_spans(["O", "O"]) == set()


def test_an_ner_example_shows_gold_and_predicted_entities_and_the_errors_filter_keeps_the_wrong_ones(client, model):
    ner = Dataset.objects.get(slug="demo-ner")
    dev = split(ner, "dev")
    wrong = {row["id"] for row in dev[::2]}  # every other example predicted with no entity at all
    predicted = [["O"] * len(row["tags"]) if row["id"] in wrong else row["tags"] for row in dev]
    wrong = {row["id"] for row in dev if row["id"] in wrong and any(tag != "O" for tag in row["tags"])}
    result = reproduced(model, ner, [70.0, 72.0], dev_predictions={"42": predicted, "43": [r["tags"] for r in dev]})

    page = client.get(MODEL).content.decode()
    assert f'href="{viewer(result)}?run=42"' in page and f'href="{viewer(result)}?run=43"' in page
    shown = client.get(viewer(result), {"run": "42"})
    assert shown.status_code == 200
    text = text_of(shown)
    assert f"{len(dev)} dev examples, {len(wrong)} wrong" in text
    first = next(row for row in dev if row["id"] in wrong)
    entity = next(i for i, tag in enumerate(first["tags"]) if tag.split("-")[0] == "B")
    assert f'<mark class="gold">{html.escape(first["tokens"][entity])}' in shown.content.decode()
    errors = text_of(client.get(viewer(result), {"run": "42", "errors": "1", "page": "1"}))
    listed = set(re.findall(r"(demo-\S+)\s+wrong", errors))
    assert listed and listed <= wrong and not re.search(r"demo-\S+\s+right", errors)
    assert f"{len(dev)} dev examples" in text_of(client.get(viewer(result), {"run": "43"}))
    assert " wrong" not in text_of(client.get(viewer(result), {"run": "43"})).split("dev examples", 1)[1][:20]


def test_a_relation_example_shows_its_entity_pair_gold_and_prediction_and_the_search_finds_it(client, model):
    relation = Dataset.objects.get(slug="demo-relation")
    dev = split(relation, "dev")
    labels = sorted({row["label"] for row in dev})
    flipped = [labels[(labels.index(row["label"]) + 1) % len(labels)] for row in dev]
    result = reproduced(model, relation, [50.0], dev_predictions={"42": flipped})
    row = dev[0]
    head = row["text"][row["head"]["start"] : row["head"]["end"]]
    tail = row["text"][row["tail"]["start"] : row["tail"]["end"]]
    found = text_of(client.get(viewer(result), {"q": row["id"]}))
    assert f"{len(dev)} dev examples, {len(dev)} wrong; 1 shown" in " ".join(found.split())
    assert f"Entity pair: {head} ({row['head']['type']}) and {tail} ({row['tail']['type']})" in " ".join(found.split())
    assert f"Gold {row['label']} Predicted {flipped[0]}" in " ".join(found.split())


def test_pages_of_twenty_and_a_question_shows_its_question_context_and_answers(client, model):
    qa = Dataset.objects.get(slug="demo-qa")
    dev = split(qa, "dev")
    schema = (qa.adapter or {}).get("schema")
    predictions = [
        (row["answers"]["text"] or [""])[0] if schema == "extractive-qa" else row.get("labels") for row in dev
    ]
    result = reproduced(model, qa, [60.0], dev_predictions={"42": predictions})
    text = " ".join(text_of(client.get(viewer(result))).split())
    assert f"{len(dev)} dev examples." in text  # all right
    if schema == "extractive-qa":
        assert f"Question: {dev[0]['question']}" in text
    if len(dev) > 20:
        assert "page 1 of" in text and "page 2 of" in " ".join(text_of(client.get(viewer(result), {"page": 2})).split())


def test_results_recorded_before_dev_predictions_were_kept_say_so(client, model):
    result = reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0])  # version 1: no dev predictions
    stored = artefacts.storage()
    name = f"jobs/{result.job_id}/results.json"
    with stored.open(name, "rb") as handle:
        document = json.loads(handle.read())
    document["version"] = 1
    document.pop("dev_predictions", None)
    stored.delete(name)
    artefacts.store_bytes(json.dumps(document).encode(), name)
    assert "No dev predictions (recorded before they were kept)." in text_of(client.get(MODEL))
    assert "no dev predictions (recorded before they were kept)" in text_of(client.get(viewer(result)))


def test_a_restricted_datasets_examples_are_for_staff_only_and_an_unshareable_ones_text_is_not_shown(
    client, model, bob, staff
):
    ner = Dataset.objects.get(slug="demo-ner")
    dev = split(ner, "dev")
    result = reproduced(model, ner, [70.0], dev_predictions={"42": [row["tags"] for row in dev]})
    Dataset.objects.filter(pk=ner.pk).update(access=Dataset.Access.RESTRICTED)
    client.force_login(bob)
    assert client.get(viewer(result)).status_code == 404
    assert "Shown to staff only" in text_of(client.get(MODEL))
    client.force_login(staff)
    assert client.get(viewer(result)).status_code == 200
    Dataset.objects.filter(pk=ner.pk).update(access=Dataset.Access.PUBLIC, demo=False, text_shareable=False)
    client.logout()
    text = text_of(client.get(viewer(result)))
    assert "does not let its text be redistributed" in text and dev[0]["id"] in text
    words = [token for row in dev for token in row["tokens"] if len(token) > 6]
    assert not any(f" {word} " in text for word in words)


def test_no_viewer_or_api_route_returns_test_gold(client, model):
    """The viewer reads only the dev split; the test split appears nowhere but as ids and predictions in the
    predictions download, whose lines carry no gold field."""
    ner = Dataset.objects.get(slug="demo-ner")
    dev, test = split(ner, "dev"), split(ner, "test")
    result = reproduced(model, ner, [70.0], predictions={"42": [row["tags"] for row in test]},
                        dev_predictions={"42": [row["tags"] for row in dev]})  # fmt: skip
    test_ids = {row["id"] for row in test} - {row["id"] for row in dev}
    assert test_ids
    searched = client.get(viewer(result), {"q": next(iter(test_ids))})
    assert "No example matches." in text_of(searched)  # a test example's id finds nothing: it is not here
    pages = [client.get(viewer(result), query) for query in ({}, {"errors": "1"}, {"q": "demo"}, {"page": "2"})]
    pages += [client.get(MODEL), client.get("/api/v1/models/alice/alice-bert"), client.get(f"{MODEL}?format=json")]
    for page in pages:
        assert page.status_code == 200
        body = page.content.decode()
        assert not any(test_id in body for test_id in test_ids)
    download = client.get(f"{MODEL}predictions/{result.pk}.jsonl")
    lines = [json.loads(line) for line in b"".join(download.streaming_content).decode().splitlines()]
    assert lines and all(set(line) <= {"id", "seed", "fold", "prediction"} for line in lines)


def test_every_schema_pairs_rows_and_predictions_in_order():
    rows = [{"id": "a", "text": "x", "text_pair": "", "labels": ["yes"]}, {"id": "b", "text": "y", "text_pair": "",
                                                                            "labels": ["no"]}]  # fmt: skip
    shown = examples("classification", rows, ["yes", "yes"], shows_text=True)
    assert [(e.id, e.right) for e in shown] == [("a", True), ("b", False)]
    scores = examples("regression", [{"id": "s", "text": "a", "text_pair": "b", "score": 3.0}], [2.5], True)
    assert scores[0].right is None and scores[0].error == pytest.approx(-0.5)
    answers = {"text": ["aspirin"], "answer_start": [4]}
    asked = [{"id": "q", "question": "Which?", "context": "The aspirin.", "answers": answers}]
    assert examples("extractive-qa", asked, ["The Aspirin"], True)[0].right  # SQuAD's normalisation
    with pytest.raises(ValueError):
        examples("classification", rows, ["yes"], True)  # a count that does not match is never shown half


def test_a_chemprot_dev_example_shows_its_entity_pair_gold_and_prediction_but_not_its_unshareable_text(
    client, model, official_data
):
    """The real ChemProt (Gu et al. 2021's BLURB copy): its licence is not stated, so its sentences stay unshown."""
    from registry.imports import import_dataset

    import_dataset("chemprot", official_data("ChemProt", "blurb", "train.tsv").parent)
    chemprot = Dataset.objects.get(slug="chemprot")
    dev = split(chemprot, "dev")
    predicted = ["CPR:4" if row["label"] != "CPR:4" else "false" for row in dev]
    result = reproduced(model, chemprot, [62.0], dev_predictions={"42": predicted})
    row = dev[0]
    head = row["text"][row["head"]["start"] : row["head"]["end"]]
    tail = row["text"][row["tail"]["start"] : row["tail"]["end"]]
    text = " ".join(text_of(client.get(viewer(result), {"q": row["id"]})).split())
    assert f"{len(dev)} dev examples, {len(dev)} wrong; 1 shown" in text
    assert f"Entity pair: {head} ({row['head']['type']}) and {tail} ({row['tail']['type']})" in text
    assert f"Gold {row['label']} Predicted {predicted[0]}" in text
    assert "does not let its text be redistributed" in text and row["text"] not in text
