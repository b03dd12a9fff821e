"""Fine-tune and evaluate one model on one dataset by the protocol, and write the results document.

The job's spec in, the results document out: no Django, no database. A GPU worker hands the
engine the job's :class:`~biolm.contract.FinetuneJob` as a file, and uploads the
:class:`~biolm.contract.ResultsDocument` this writes; a person's command line builds the same
spec from flags (:mod:`workers.engine.run_settings`). The dataset's task type (a plugin contribution)
names the formulation and the metrics; the job's protocol (a plugin contribution too,
:mod:`biolm.protocols`) the grid, the seeds, the folds and the statistic. Before anything is
trained the code the spec pins is checked against the code loaded here.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from workers.engine import efficiency, preflight
from workers.engine.formulations.base import PristineWeights
from workers.engine.protocol import Context, run_whole
from workers.engine.protocol_slices import run_slice
from workers.engine.runs import FinetuneSpec, Runner, check_code
from workers.engine.training import ProgressCallback

__all__ = ["FinetuneSpec", "finetune"]


def finetune(
    spec: FinetuneSpec,
    progress_factory: Callable[[str, int, int], ProgressCallback] | None = None,
    *,
    load_once: bool = True,
) -> dict:
    """Fine-tune and evaluate by the job's protocol; returns (and writes) the results document, as JSON.

    ``load_once``: read the checkpoint from disk once for the whole job (its grid, seeds and
    folds) and build every run's model from the weights kept in memory; False reads it for each
    run, the older path, which gives the same results. Refused (other code than the job pins, a
    bad checkpoint, an unknown dataset, no data), it leaves no ``--out`` directory that it created
    (:func:`preflight.output_directory`).
    """
    with preflight.output_directory(spec.out):
        return _finetune(spec, progress_factory, load_once)


def _finetune(
    spec: FinetuneSpec, progress_factory: Callable[[str, int, int], ProgressCallback] | None, load_once: bool = True
) -> dict:
    check_code(spec)
    context = Context.of(spec)
    efficiency.reset_peak_memory(context.device)
    weights = PristineWeights(spec.model.model) if load_once and spec.model.model is not None else None
    runner = Runner(spec, context.device, context.dtype, progress_factory, weights)
    if spec.part is None:
        document, name = run_whole(context, runner), "results.json"
    else:
        document, name = run_slice(context, runner, spec.part, spec.run.slices)
    spec.out.mkdir(parents=True, exist_ok=True)
    (spec.out / name).write_text(json.dumps(document, indent=2, default=str), encoding="utf-8")
    return document
