"""Test gold never leaves the platform: a worker predicts a test split whose gold is withheld, the platform scores it.

For every BLURB-mini task type the same fine-tune runs twice, once on the real test split and
once on the copy a worker receives (each example's gold replaced by a placeholder); the
predictions must be identical, the withheld run must report no test score of its own, and the
platform's scoring of its predictions must equal the engine's own scoring of the real split.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from biolm.canonical_jsonl import read_canonical_jsonl
from biolm.contract import ResultsDocument
from biolm.dataset_io import LoadedDataset, fingerprint_of
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.schemas import get_schema
from workers.engine.__main__ import main
from workers.engine.withheld import score_withheld

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"
DATASETS = ["demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa"]
FAST = ("demo-pico", "demo-similarity")  # what `make test-fast` checks: a tagging and a regression; `make test` all


@pytest.fixture(scope="module")
def contributions():
    return collect_contributions(get_plugin_manager(load_entrypoints=False))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


def canonical(dataset: str) -> dict[str, list[dict]]:
    splits = read_canonical_jsonl(DEMO / dataset)
    return {split: [{k: v for k, v in row.items() if k != "_where"} for row in rows] for split, rows in splits.items()}


def write(splits: dict[str, list[dict]], directory: Path) -> Path:
    directory.mkdir(parents=True)
    for split, rows in splits.items():
        (directory / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return directory


def finetune(checkpoint: Path, dataset: str, data: Path, out: Path, *extra: str) -> dict:
    arguments = ["finetune", "--model", str(checkpoint), "--dataset", dataset, "--data_dir", str(data),
                 "--data_format", "canonical", "--grid", "single", "--seeds", "2", "--epochs", "1",
                 "--max_length", "128", "--out", str(out), *extra]  # fmt: skip
    assert main(arguments) == 0
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("dataset", [d if d in FAST else pytest.param(d, marks=pytest.mark.slow) for d in DATASETS])
def test_the_platform_scores_withheld_predictions_exactly_as_the_engine_scores_gold(
    dataset, checkpoint, contributions, tmp_path
):
    spec = contributions.datasets[dataset]
    gold = canonical(dataset)
    schema = get_schema(spec.adapter.schema)
    multi = spec.adapter.multi_label
    labels = sorted({label for rows in gold.values() for row in rows for label in schema.validate(row, "", multi)})
    placeholder = "O" if "O" in labels else (labels[0] if labels else "0")
    withheld = {**gold, "test": [schema.withhold_gold(row, placeholder) for row in gold["test"]]}
    assert withheld["test"] != gold["test"]

    with_gold = finetune(checkpoint, dataset, write(gold, tmp_path / "gold"), tmp_path / "a")
    blind = finetune(
        checkpoint, dataset, write(withheld, tmp_path / "withheld"), tmp_path / "b", "--test_gold_withheld"
    )

    assert blind["test"] is None and all("test" not in run["metrics"] for run in blind["runs"])
    assert blind["predictions"] == with_gold["predictions"]  # the placeholders changed nothing the model saw
    as_loaded = {name: LoadedDataset(spec, s, labels, fingerprint_of(s)) for name, s in (("g", gold), ("w", withheld))}
    scored = score_withheld(ResultsDocument.from_json(blind), checkpoint, as_loaded["w"], as_loaded["g"])
    expected = {str(run["seed"]): run["metrics"]["test"] for run in with_gold["runs"]}
    assert scored.keys() == expected.keys()
    for seed, metrics in expected.items():
        assert scored[seed] == pytest.approx(metrics, abs=1e-6), seed


def test_withholding_keeps_every_input_and_replaces_all_gold_with_one_constant(contributions):
    gold_fields = {"tags", "labels", "label", "score", "answers"}
    for dataset in DATASETS:
        adapter = contributions.datasets[dataset].adapter
        schema = get_schema(adapter.schema)
        for row in canonical(dataset)["test"]:
            blind = schema.withhold_gold(row, "P")
            schema.validate(blind, dataset, adapter.multi_label)  # still a valid example of its schema
            assert {k: v for k, v in blind.items() if k not in gold_fields} == {
                k: v for k, v in row.items() if k not in gold_fields
            }
            for name in gold_fields & set(blind):
                value = blind[name]
                assert value in ("P", ["P"], 0.0, {"text": [], "answer_start": []}) or set(value) == {"P"}, name
