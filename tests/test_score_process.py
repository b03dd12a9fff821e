"""A score job's scoring in the engine's own process: its two documents, the data copies it reads, and the
causes its failures map to. The happy paths run through the real process in the per-class, cross-validation
and preview tests; a real CPU worker scoring without torch is checked in ``test_jobs_faults``."""

from __future__ import annotations

import json
import math

import pytest

from biolm.contract import ContractError
from biolm.contract.scores import DataCopy, ScoreInputs, ScoresDocument, ScoringPart
from biolm.data_copies import read_copy, write_copy
from biolm.dataset_io import LoadedDataset, fingerprint_of
from biolm.plugins import collect_contributions, get_plugin_manager


def scores(**changes) -> dict:
    document = ScoresDocument({"1": {"accuracy": 0.5}}, [0.5, math.nan, 0.75], {"classes": []}).to_json()
    return {**document, **changes}


def test_a_scores_document_round_trips_with_undefined_resamples_as_null():
    written = scores()
    assert written["resamples"] == [0.5, None, 0.75]
    json.dumps(written, allow_nan=False)  # strict JSON: NaN is written as null
    read = ScoresDocument.from_json(json.loads(json.dumps(written)))
    assert read.test_metrics == {"1": {"accuracy": 0.5}} and read.per_class == {"classes": []}
    assert read.resamples[0] == 0.5 and math.isnan(read.resamples[1])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 2}, "reads scores version 1, not 2"),
        ({"extra": 1}, "unknown field"),
        ({"resamples": [0.5, "x"]}, "not a finite number or null"),
        ({"resamples": []}, "non-empty list"),
        ({"test_metrics": {"not-a-run": {}}}, "not-a-run"),
        ({"per_class": [1]}, "per_class must be a JSON object"),
    ],
)
def test_a_scores_document_of_another_version_or_shape_is_refused_naming_what_is_wrong(changes, message):
    with pytest.raises(ContractError, match=message):
        ScoresDocument.from_json(scores(**changes))


def test_score_inputs_round_trip_and_refuse_a_missing_field(tmp_path):
    copy = DataCopy(str(tmp_path), ["up", "down"], ["a note"], {"t1": ["x"]})
    inputs = ScoreInputs("results.json", "tokenizer", "demo-ner", "f1", [ScoringPart(2, copy, copy)], False)
    assert ScoreInputs.from_json(json.loads(json.dumps(inputs.to_json()))) == inputs
    assert inputs.part(2).gold == copy
    with pytest.raises(ContractError, match="no data for fold 3"):
        inputs.part(3)
    incomplete = inputs.to_json()
    del incomplete["metric"]
    with pytest.raises(ContractError, match="missing field"):
        ScoreInputs.from_json(incomplete)


def loaded(rows: dict[str, list[dict]]) -> LoadedDataset:
    spec = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets["demo-doc-classification"]
    return LoadedDataset(spec, rows, ["negative", "positive"], fingerprint_of(rows), ["kept"], {"t1": ["tag"]})


def test_a_data_copy_reads_back_the_examples_written_and_refuses_one_changed_on_the_way(tmp_path):
    rows = {"train": [{"id": "a", "text": "Café ß", "label": "positive"}], "test": [{"id": "t1", "text": "x"}]}
    original = loaded(rows)
    copy = write_copy(original, tmp_path / "gold")
    again = read_copy(DataCopy.from_json(json.loads(json.dumps(copy.to_json()))), original.spec)
    assert again == original
    (tmp_path / "gold" / "test.jsonl").write_text('{"id": "t1", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not the \w+ written"):
        read_copy(copy, original.spec)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from checkpoints import demo_texts, tiny_bert

    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


@pytest.mark.slow
def test_predictions_the_engine_cannot_score_fail_the_score_job_as_the_submissions_in_the_engines_words(
    alice, checkpoint, artefact_store, monkeypatch
):
    from test_per_class_pages import finetuned

    from jobs.handlers import JobRefused
    from jobs.models import Job
    from jobs.results import load_results
    from leaderboard import recording

    score = finetuned(alice, checkpoint, artefact_store / "worker")
    results = load_results(Job.objects.get(pk=score.contract.finetune_job))
    key = sorted(results.predictions)[0]
    results.predictions[key] = results.predictions[key][:-1]  # one test example short, as a broken worker sends
    monkeypatch.setattr(recording, "load_results", lambda job: results)
    with pytest.raises(JobRefused, match=rf"job #\d+: its test predictions cannot be scored: seed {key}: ") as refused:
        recording.record(score)
    assert "error: its test predictions cannot be scored" in refused.value.log  # the engine's own line, for the log
