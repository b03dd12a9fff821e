"""Scoring test predictions against gold the worker never saw: the platform's side of a withheld test split.

A worker fine-tunes with ``--test_gold_withheld``: its test split carries placeholder gold, so it
predicts test and scores nothing there. The platform, which keeps the real labels, calls
:func:`score_withheld` with the worker's results, the model's tokenizer and both copies of the
data. The formulation is rebuilt exactly as the worker built it (same spec, same label space,
computed from the same withheld copy), so decoding conventions and metric options match; only
the gold differs. :func:`gold_scoring` is that rebuilding, shared with the bootstrap
(:mod:`workers.engine.bootstrap`), which scores the same predictions on resamples of the rows.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biolm.contract import ResultsDocument
from biolm.dataset_io import LoadedDataset
from workers.engine.formulations import Formulation, ModelSource, formulation_for
from workers.engine.run_settings import FinetuneSpec, ModelArguments, RunArguments
from workers.engine.runs import first_examples, label_space, load_task
from workers.engine.tokenization import load_tokenizer


@dataclass(frozen=True)
class GoldScoring:
    """The formulation the worker scored with, and the gold test rows its predictions belong to."""

    formulation: Formulation
    rows: list[dict]

    def run_inputs(self, results: ResultsDocument, key: str) -> tuple[list, list[np.ndarray]]:
        """One run's test predictions and (when the worker stored them) per-example scores, checked against the rows."""
        predicted = results.predictions.get(key)
        if predicted is None or len(predicted) != len(self.rows):
            raise ValueError(f"seed {key}: {len(predicted or [])} test predictions for {len(self.rows)} examples")
        vectors = (results.test_scores or {}).get(key)
        logits = [np.asarray(v, dtype=np.float32) for v in vectors] if vectors else []
        return list(predicted), logits


def gold_scoring(
    results: ResultsDocument, tokenizer_dir: Path, withheld: LoadedDataset, gold: LoadedDataset
) -> GoldScoring:
    """Rebuild the worker's formulation from its results; refuse gold that lists other examples than it predicted.

    ``withheld`` is the copy the worker read (its label space decides the formulation's, as it did
    on the worker); ``gold`` the same examples with their real labels. The job's spec, as the
    results document carries it, decides the task options, the length and the examples cut.
    """
    spec = FinetuneSpec(results.spec, ModelArguments(model=Path(tokenizer_dir)), RunArguments(out=Path(tokenizer_dir)))
    _, _, task = load_task(spec)
    withheld, gold = first_examples(withheld, spec), first_examples(gold, spec)
    labels = label_space(task, withheld)
    tokenizer = load_tokenizer(Path(tokenizer_dir))
    source = ModelSource(Path(tokenizer_dir), None, len(tokenizer))
    formulation = formulation_for(task, labels, tokenizer, results.spec.task_options, spec.max_length, source)
    rows = gold.splits["test"]
    if [r["id"] for r in rows] != [r["id"] for r in withheld.splits["test"]]:
        raise ValueError("the gold and the withheld test splits list different examples")
    return GoldScoring(formulation, rows)


def score_withheld(
    results: ResultsDocument,
    tokenizer_dir: Path,
    withheld: LoadedDataset,
    gold: LoadedDataset,
    keys: Collection[str] | None = None,
) -> dict[str, dict[str, float | None]]:
    """``{key: {metric: value}}`` of each run's test predictions against the gold test split.

    A key is a seed, or ``fold<k>-seed<s>`` under cross-validation, where each fold is scored
    against its own test: ``keys`` then names that fold's runs.
    """
    scoring = gold_scoring(results, tokenizer_dir, withheld, gold)
    scored = {}
    for key in results.predictions:
        if keys is not None and key not in keys:
            continue
        predicted, logits = scoring.run_inputs(results, key)
        scored[key] = scoring.formulation.score(scoring.rows, predicted, logits)
    return scored
