"""A third-party distribution adds a metric, a task type with its own formulation, a dataset and a
benchmark, and the engine fine-tunes and scores with them: no core code knows about any of it.

The distribution is written here, built and pip-installed into a temporary directory; the engine
runs as users run it (``python -m workers.engine finetune`` in a subprocess), and the metric's
value is checked against scikit-learn's Matthews correlation on the predictions the engine saved.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import matthews_corrcoef

from tests.distributions import install_distribution

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = """
from pathlib import Path

from biolm import hookimpl
from biolm.canonical_jsonl import READER
from biolm.specs import (
    AdapterSpec, AggregationSpec, BenchmarkSpec, DatasetSpec, EntrySpec, MetricSample, MetricSpec, SummarySpec,
    TaskTypeSpec,
)

DATA = str(Path(__file__).resolve().parent / "data" / "tp-polarity")


@hookimpl
def biolm_metrics():
    return [
        MetricSpec(
            "tp-mcc", "Matthews correlation", "Matthews correlation coefficient x 100.",
            "biolm_tp_plugin.mcc:matthews", value_range=(-100.0, 100.0),
            sample=MetricSample(gold=("up", "down", "up"), predictions=("up", "down", "up")),
        )
    ]


@hookimpl
def biolm_task_types():
    return [
        TaskTypeSpec(
            "tp-polarity", "Polarity", "Is the finding an increase or a decrease?", schema="classification",
            formulation="biolm_tp_plugin.formulation:MaxPooledPolarity", metric="tp-mcc",
            companion_metrics=("accuracy",), epochs=4, seeds=2,
        )
    ]


@hookimpl
def biolm_datasets():
    return [
        DatasetSpec(
            "tp-polarity", "Third-party polarity", "tp-polarity", "tp-mcc", "biomedical", "Invented findings.",
            labels=("up", "down"), adapter=AdapterSpec("classification", READER, default_path=DATA, samples=DATA),
        )
    ]


@hookimpl
def biolm_benchmarks():
    return [
        BenchmarkSpec(
            "tp-bench", "Third-party benchmark", "Polarity by MCC.",
            entries=(EntrySpec("tp-polarity", "tp-polarity", "tp-mcc"),),
            aggregation=AggregationSpec("1", "mean", summaries=(SummarySpec("mean", "Mean", "mean"),)),
        )
    ]
"""

MCC = '''
import math


def matthews(gold, predictions):
    """Binary Matthews correlation x 100 of the two labels seen; 0 when a margin is empty (as scikit-learn)."""
    if len(gold) != len(predictions):
        raise ValueError("gold and predictions differ in length")
    labels = sorted(set(gold) | set(predictions))
    positive = labels[-1]
    tp = sum(g == p == positive for g, p in zip(gold, predictions))
    tn = sum(g != positive and p != positive for g, p in zip(gold, predictions))
    fp = sum(g != positive and p == positive for g, p in zip(gold, predictions))
    fn = sum(g == positive and p != positive for g, p in zip(gold, predictions))
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return 100 * (tp * tn - fp * fn) / denominator if denominator else 0.0
'''

FORMULATION = '''
import numpy as np
import torch
from transformers.modeling_outputs import SequenceClassifierOutput

from workers.engine.encoding import decode_sequences, encode_sequences
from workers.engine.formulations.base import Formulation


class MaxPooledClassifier(torch.nn.Module):
    def __init__(self, encoder, num_labels):
        super().__init__()
        self.encoder, self.config = encoder, encoder.config
        self.classifier = torch.nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, labels=None, **_):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        hidden = hidden.masked_fill(attention_mask.unsqueeze(-1) == 0, -1e4)
        logits = self.classifier(hidden.max(dim=1).values)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


class MaxPooledPolarity(Formulation):
    """A formulation written from the interface alone: max-pooled token vectors, one label per text."""

    name = "tp-max-pooled"
    schemas = ("classification",)

    def encode(self, rows):
        return encode_sequences(rows, self.tokenizer, self.labels, self.max_length, pair_key=None)

    def build_model(self, source):
        return MaxPooledClassifier(source.encoder(), self.labels.size)

    def decode(self, features, logits, rows, model):
        return decode_sequences(np.stack(logits), self.labels)
'''

UP = ["increased", "raised", "elevated", "enhanced", "boosted"]
DOWN = ["decreased", "lowered", "reduced", "diminished", "suppressed"]
THINGS = ["expression", "survival", "pressure", "activity", "uptake", "levels", "signalling", "growth"]


def _write_split(path: Path, n: int, rng: random.Random) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            label = "up" if i % 2 == 0 else "down"
            verb = rng.choice(UP if label == "up" else DOWN)
            text = f"Treatment {verb} {rng.choice(THINGS)} in {rng.choice(['mice', 'patients', 'cells'])} ."
            handle.write(
                json.dumps({"id": f"{path.stem}-{i}", "text": text, "text_pair": "", "labels": [label]}) + "\n"
            )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("biolm-tp-plugin")
    data = source / "biolm_tp_plugin" / "data" / "tp-polarity"
    data.mkdir(parents=True)
    rng = random.Random(7)
    for split, n in (("train", 80), ("dev", 20), ("test", 30)):
        _write_split(data / f"{split}.jsonl", n, rng)
    files = {
        "biolm_tp_plugin/__init__.py": PLUGIN,
        "biolm_tp_plugin/mcc.py": MCC,
        "biolm_tp_plugin/formulation.py": FORMULATION,
    }
    package_data = '\n[tool.setuptools.package-data]\nbiolm_tp_plugin = ["data/*/*.jsonl"]\n'
    return install_distribution(
        source,
        tmp_path_factory.mktemp("site"),
        "biolm-tp-plugin",
        "1.0",
        files,
        {"tp": "biolm_tp_plugin"},
        package_data,
    )


@pytest.mark.slow
def test_the_engine_fine_tunes_and_scores_with_a_third_party_metric_task_type_and_dataset(installed, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(installed), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [
        sys.executable, "-m", "workers.engine", "finetune", "--architecture", "bert:tiny", "--dataset", "tp-polarity",
        "--grid", "single", "--learning-rate", "1e-3", "--batch-size", "8", "--out", str(out),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    results = json.loads((out / "results.json").read_text())

    # The task type's protocol defaults and formulation, the dataset's metric and the companion all came from it.
    assert results["task_type"] == "tp-polarity"
    assert results["formulation"]["name"] == "tp-max-pooled"
    assert results["chosen_hyperparameters"]["epochs"] == 4
    assert len(results["runs"]) == 2
    assert "tp" in results["provenance"]["plugins"] and "biolm-tp-plugin 1.0" in results["provenance"]["plugins"]["tp"]

    gold = [
        json.loads(line)["labels"][0] for line in (installed / "biolm_tp_plugin/data/tp-polarity/test.jsonl").open()
    ]
    for run in results["runs"]:
        predictions = results["predictions"][str(run["seed"])]
        reference = 100 * matthews_corrcoef(gold, predictions)
        assert run["metrics"]["test"]["tp-mcc"] == pytest.approx(reference, abs=1e-9)
        accuracy = 100 * sum(g == p for g, p in zip(gold, predictions, strict=True)) / len(gold)
        assert run["metrics"]["test"]["accuracy"] == pytest.approx(accuracy)
    assert results["test"]["mean"] > 0, "the tiny model should learn this polarity task"


def test_a_third_party_task_type_and_benchmark_are_accepted_by_validation(installed, monkeypatch):
    from biolm.plugins import collect_contributions, get_plugin_manager

    monkeypatch.syspath_prepend(str(installed))
    contributions = collect_contributions(get_plugin_manager())
    try:
        assert contributions.datasets["tp-polarity"].task_type == "tp-polarity"
        assert contributions.benchmarks["tp-bench"].entries[0].metric == "tp-mcc"
        assert not [p for p in contributions.problems if p.plugin == "tp"]
    finally:
        for name in [m for m in sys.modules if m.startswith("biolm_tp_plugin")]:
            del sys.modules[name]
