"""``python -m workers.engine score --spec FILE --out DIR``: a score job's scoring, in a process of its own.

The platform's Django processes never load torch, so a score job hands this process its inputs as
files (:class:`biolm.contract.scores.ScoreInputs`): the fine-tuning job's results document, the
model's tokenizer, and, for the test split or each fold, the data the worker read and the same
examples with their gold (:mod:`biolm.data_copies`). It answers ``DIR/scores.json``
(:class:`~biolm.contract.scores.ScoresDocument`):

* where the worker predicted a withheld test split, each run's test metrics against the gold
  (:func:`workers.engine.withheld.score_withheld`), each fold against its own test;
* the benchmark metric on each shared bootstrap resample (:mod:`workers.engine.bootstrap`), over the
  reported folds under cross-validation;
* the per-class figures (:mod:`workers.engine.per_class_counts`).

With ``--local_data`` it scores on this host's own copy of the dataset instead (a data holder's worker, whose
gated data and gold never leave its hosts, :mod:`jobs.held`): the copy the fine-tuning job read there.

Predictions that cannot be scored are the submission's: a ``ValueError`` saying which step refused them,
which the engine's exit status reports as a refusal (:mod:`workers.engine.exit_status`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path

from biolm.contract import ResultsDocument
from biolm.contract.scores import SCORES_FILE, ScoreInputs, ScoresDocument
from biolm.data_copies import read_copy
from biolm.dataset_io import LoadedDataset, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from workers.engine.bootstrap import resampled_values
from workers.engine.per_class_counts import per_class_figures
from workers.engine.runs import data_directory
from workers.engine.withheld import score_withheld

logger = logging.getLogger(__name__)
Copies = dict[int | None, tuple[LoadedDataset, LoadedDataset]]  # fold (None: the test split) -> (seen, gold)


def score_job(spec_file: Path, out: Path, local_data: bool = False) -> ScoresDocument:
    """Score what ``spec_file`` names and write ``out/scores.json``; the document written. ``local_data``: score on
    this host's own copy of the dataset (a data holder's, gold included) in place of the copies the inputs name."""
    inputs = ScoreInputs.from_json(json.loads(spec_file.read_text(encoding="utf-8")))
    results = ResultsDocument.from_json(json.loads(Path(inputs.results).read_text(encoding="utf-8")))
    scores = score(inputs, results, local_data)
    out.mkdir(parents=True, exist_ok=True)
    (out / SCORES_FILE).write_text(json.dumps(scores.to_json()), encoding="utf-8")
    return scores


def score(inputs: ScoreInputs, results: ResultsDocument, local_data: bool = False) -> ScoresDocument:
    """The scores of ``results`` on the data ``inputs`` names (see the module's docstring), or on this host's own."""
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=inputs.load_entrypoints))
    spec = contributions.datasets.get(inputs.dataset)
    if spec is None:
        raise ValueError(f"dataset {inputs.dataset!r} is not contributed by any plugin installed here")
    if local_data:
        copies = _local_copies(spec, results)
    else:
        copies = {part.fold: (read_copy(part.seen, spec), read_copy(part.gold, spec)) for part in inputs.parts}
    tokenizer = Path(inputs.tokenizer)
    test_metrics = _withheld_metrics(results, tokenizer, copies) if results.test_gold_withheld else {}
    if not any(results.predictions.values()):
        return ScoresDocument(test_metrics, None, None)  # nothing to resample or break down
    seen, gold = _reported(results, copies)
    started = time.perf_counter()
    try:
        vector = resampled_values(results, tokenizer, seen, gold, inputs.metric, inputs.dataset)
    except ValueError as exc:
        raise ValueError(f"its test predictions cannot be resampled: {exc}") from None
    logger.info("%d bootstrap resamples of %s in %.1f s", len(vector), inputs.dataset, time.perf_counter() - started)
    try:
        breakdown = per_class_figures(results, tokenizer, seen, gold)
    except ValueError as exc:
        raise ValueError(f"its per-class figures cannot be computed: {exc}") from None
    return ScoresDocument(test_metrics, [float(v) for v in vector], breakdown.to_json() if breakdown else None)


def _local_copies(spec, results: ResultsDocument) -> Copies:
    """A data holder's own copy of the dataset, read where its adapter finds it here, as the fine-tuning job read
    it (its test split cut to ``max_eval_examples`` as the engine cut it): seen and gold are the same examples."""
    if results.on_folds:
        raise RuntimeError("a held dataset's cross-validation protocol is not scored on its holder's hosts yet")
    data = load_dataset_files(spec, data_directory(spec.adapter.default_path))
    limit = results.spec.overrides.max_eval_examples
    if limit and len(data.splits.get("test", [])) > limit:
        data = dataclasses.replace(data, splits={**data.splits, "test": data.splits["test"][:limit]})
    return {None: (data, data)}


def _withheld_metrics(results: ResultsDocument, tokenizer: Path, copies: Copies) -> dict[str, dict]:
    """Each run's test metrics against the gold; each fold's runs against that fold's test."""
    folds = sorted({run.fold for run in results.runs if run.fold is not None})
    parts = folds if results.on_folds else [None]
    scored: dict[str, dict] = {}
    for fold in parts:
        withheld, gold = _copy(copies, fold)
        keys = {run.key for run in results.runs if run.fold == fold} if fold is not None else None
        try:
            scored.update(score_withheld(results, tokenizer, withheld, gold, keys))
        except ValueError as exc:
            where = f" (fold {fold})" if fold is not None else ""
            raise ValueError(f"its test predictions cannot be scored{where}: {exc}") from None
    return scored


def _reported(results: ResultsDocument, copies: Copies) -> tuple:
    """The data the resamples and per-class figures read: one copy, or ``{fold: copy}`` of the reported folds."""
    if not results.on_folds:
        return _copy(copies, None)
    folds = results.reported_folds()
    pairs = {fold: _copy(copies, fold) for fold in folds}
    return {fold: pair[0] for fold, pair in pairs.items()}, {fold: pair[1] for fold, pair in pairs.items()}


def _copy(copies: Copies, fold: int | None) -> tuple[LoadedDataset, LoadedDataset]:
    if fold not in copies:
        where = f"fold {fold}" if fold is not None else "the test split"
        raise RuntimeError(f"the score job was given no data for {where}")  # the platform's bug: not refused
    return copies[fold]
