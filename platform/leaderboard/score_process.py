"""A score job's scoring, run as the engine's own process: the platform's Django processes never load torch.

The scoring worker writes the fine-tuning job's results document, the model's tokenizer files and
both copies of the data (the one the worker read, and the one with the gold, which only the
platform holds) into a private temporary folder, with a
:class:`~biolm.contract.scores.ScoreInputs` naming them, and runs ``python -m workers.engine score``
on it, as the GPU worker runs ``finetune``. The process answers a
:class:`~biolm.contract.scores.ScoresDocument`, validated here; its exit status says whose failure a
failure is (:mod:`biolm.engine_exits`): predictions that cannot be scored are the submission's, a
plugin's metric that raises is the plugin's, anything else the platform's.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from django.conf import settings

from biolm import plugin_set, warm_process
from biolm.contract import ContractError, ResultsDocument
from biolm.contract.scores import SCORES_FILE, ScoreInputs, ScoresDocument, ScoringPart
from biolm.data_copies import write_copy
from biolm.dataset_io import LoadedDataset
from biolm.engine_exits import failure_cause, failure_summary, plugin_of
from jobs.handlers import JobRefused, PluginRaised
from jobs.models import Job
from jobs.results import model_files

logger = logging.getLogger(__name__)
LOG_TAIL_CHARS = 8000
# What the warm server imports once (biolm.warm_process): the engine's entry point and everything scoring reads.
ENGINE_MODULES = ("workers.engine.__main__", "workers.engine.score_job")
PLATFORM_SECRETS = ("DATABASE_URL", "DJANGO_SECRET_KEY", "BIOLM_WORKER_SECRET")


class ScoringFailed(RuntimeError):
    """The score process crashed or wrote nothing valid (the platform's: retried); the message says how,
    ``log`` what the process printed."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


def score_in_engine(finetune: Job, results: ResultsDocument, metric: str, copies: dict) -> ScoresDocument:
    """The engine's scores of ``results`` on ``copies`` (``{fold or None: (seen, gold)}``), for ``metric``."""
    with tempfile.TemporaryDirectory(prefix=f"biolm-score-{finetune.pk}-") as temporary, \
            model_files(finetune) as tokenizer_dir:  # fmt: skip
        folder = Path(temporary)
        (folder / "results.json").write_text(json.dumps(results.to_json()), encoding="utf-8")
        parts = [_part(folder, fold, seen, gold) for fold, (seen, gold) in copies.items()]
        inputs = ScoreInputs(str(folder / "results.json"), str(tokenizer_dir), finetune.dataset.slug, metric, parts,
                             load_entrypoints=settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS)  # fmt: skip
        (folder / "inputs.json").write_text(json.dumps(inputs.to_json()), encoding="utf-8")
        code, log = _run(["score", "--spec", str(folder / "inputs.json"), "--out", str(folder / "out")], folder)
        if code != 0:
            raise _failure(finetune, code, log)
        try:
            return ScoresDocument.from_json(json.loads((folder / "out" / SCORES_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError, ContractError) as exc:
            raise ScoringFailed(f"job #{finetune.pk}: the score process wrote no valid scores: {exc}") from None


def _part(folder: Path, fold: int | None, seen: LoadedDataset, gold: LoadedDataset) -> ScoringPart:
    name = "test" if fold is None else f"fold{fold}"
    gold_copy = write_copy(gold, folder / name / "gold")
    seen_copy = gold_copy if seen is gold else write_copy(seen, folder / name / "seen")
    return ScoringPart(fold, seen_copy, gold_copy)


def _run(arguments: list[str], folder: Path) -> tuple[int, str]:
    """The engine's exit status and its log's tail; the log stays in ``folder`` for the length of the job."""
    log_path = folder / "engine.log"
    logger.info("scoring: python -m workers.engine %s", " ".join(arguments))
    environment = {name: value for name, value in os.environ.items() if name not in PLATFORM_SECRETS}
    environment["HF_HUB_OFFLINE"] = "1"  # the engine reads the files written here, never the Hub
    code = warm_process.run("workers.engine", arguments, log_path, preload=ENGINE_MODULES, environment=environment,
                            timeout_s=settings.BIOLM_SCORE_TIMEOUT_S, code=plugin_set.fingerprint())  # fmt: skip
    text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    return code, text[-LOG_TAIL_CHARS:]


def _failure(finetune: Job, code: int, log: str) -> Exception:
    """The exception that fails the score job with the right cause (see the module's docstring)."""
    cause, summary = failure_cause(code, log), failure_summary(code, log)
    logger.warning("job #%s: the score process failed: %s", finetune.pk, summary)
    if cause == "submission":
        return JobRefused(f"job #{finetune.pk}: {summary}", log)
    if cause == "plugin":
        return PluginRaised(summary, plugin_of(log), log)
    return ScoringFailed(f"job #{finetune.pk}: scoring: {summary}", log)
