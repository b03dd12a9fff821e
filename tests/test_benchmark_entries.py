"""Every number a built-in benchmark asks for is one the engine produces from the dataset's predictions.

For each dataset a benchmark names, the test builds the dataset's formulation, feeds it perfect
predictions of a few examples in the dataset's labels, and checks that its scores contain every
metric the benchmark's entries name for that dataset, each a number. Entries that cannot be
produced on the user's side are listed in docs/benchmarks.md (and here), with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.encoding import LabelSpace
from workers.engine.formulations import TaskOptions, formulation_for
from workers.engine.formulations.base import ModelSource
from workers.engine.task import Task
from workers.engine.tokenization import train_wordpiece

CONTRIBUTIONS = collect_contributions(get_plugin_manager(load_entrypoints=False))
# Bioformer's BioASQ factoid "with SQuAD 1.1" rows fine-tune on SQuAD first, which biolm does not ship.
NOT_PRODUCIBLE = {("bioformer", "bioasq-factoid-squad-strict"), ("bioformer", "bioasq-factoid-squad-lenient"),
                  ("bioformer", "bioasq-factoid-squad-mrr")}  # fmt: skip
ENTRIES = [
    (benchmark.slug, entry)
    for benchmark in CONTRIBUTIONS.benchmarks.values()
    for entry in benchmark.entries
    if (benchmark.slug, entry.key) not in NOT_PRODUCIBLE
]
DATASETS = sorted({entry.dataset for _, entry in ENTRIES})


def perfect(task: Task) -> tuple[LabelSpace, list[dict], list, np.ndarray | None]:
    """A few rows in the dataset's labels, perfect predictions of them, and matching scores."""
    schema, labels = task.task_type.schema, tuple(task.dataset.labels)
    if schema == "token-tagging":
        names = ("O", *(n for n in labels if n != "O"))
        inside = [n for n in names if n != "O"]
        rows = [{"id": str(i), "tokens": ["w"] * 4, "tags": [inside[i % len(inside)], "O", inside[-1], "O"]}
                for i in range(4)]  # fmt: skip
        if "B" in names:
            rows = [{"id": str(i), "tokens": ["w"] * 3, "tags": ["B", "I", "O"]} for i in range(3)]
        return LabelSpace(names), rows, [list(row["tags"]) for row in rows], None
    if schema == "regression":
        rows = [{"id": str(i), "text": "a", "text_pair": "b", "score": float(i)} for i in range(4)]
        return LabelSpace(("score",), "regression"), rows, [float(i) for i in range(4)], None
    if schema == "extractive-qa":
        rows = [{"id": f"q{i}", "question": "q", "context": f"answer {i}", "answers": {"text": [f"answer {i}"],
                 "answer_start": [0]}} for i in range(3)]  # fmt: skip
        ranked = task.metric(task.dataset.metric).inputs == "ranked"
        return LabelSpace(()), rows, [[f"answer {i}", "x"] if ranked else f"answer {i}" for i in range(3)], None
    multi = task.dataset.adapter.multi_label
    space = LabelSpace(labels, "multi" if multi else "single")
    cycle = [labels[i % len(labels)] for i in range(2 * len(labels))]
    if schema == "relation":
        head, tail = {"start": 0, "end": 1, "type": "X"}, {"start": 2, "end": 3, "type": "Y"}
        rows = [{"id": str(i), "text": "a b", "head": head, "tail": tail, "label": y} for i, y in enumerate(cycle)]
        return space, rows, cycle, None
    gold = [[label] for label in cycle] if not multi else [[label, cycle[i - 1]] for i, label in enumerate(cycle)]
    rows = [{"id": str(i), "text": "a", "text_pair": "", "labels": g} for i, g in enumerate(gold)]
    logits = np.array([[5.0 if name in g else -5.0 for name in labels] for g in gold])
    return space, rows, gold if multi else cycle, logits


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_engine_produces_every_metric_the_benchmarks_name_for_the_dataset(dataset):
    task = Task.of(CONTRIBUTIONS, dataset)
    wanted = sorted({entry.metric for _, entry in ENTRIES if entry.dataset == dataset})
    labels, rows, predicted, logits = perfect(task)
    tokenizer = train_wordpiece(["a b w answer q x"] * 5, 120)
    source = ModelSource(architecture="bert:tiny", vocab_size=len(tokenizer))
    formulation = formulation_for(task, labels, tokenizer, TaskOptions(), 512, source)
    scores = formulation.score(rows, predicted, list(logits) if logits is not None else [])
    for metric in wanted:
        assert metric in scores, f"{dataset}: the benchmarks ask for {metric}, the engine reports {sorted(scores)}"
        assert isinstance(scores[metric], float), (dataset, metric, scores[metric])


def test_every_entry_is_covered_or_listed_as_not_producible_in_the_benchmarks_page():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    every = {(b.slug, e.key) for b in CONTRIBUTIONS.benchmarks.values() for e in b.entries}
    assert every - {(slug, entry.key) for slug, entry in ENTRIES} == NOT_PRODUCIBLE
    for _, key in NOT_PRODUCIBLE:
        assert f"`{key}`" in page
