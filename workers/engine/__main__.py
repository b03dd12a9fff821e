"""``python -m workers.engine finetune ...``: fine-tune and evaluate one model on one dataset.

Arguments are the dataclass groups of :mod:`workers.engine.run_settings` (transformers'
HfArgumentParser, as run_ner.py does). ``--spec FILE`` runs a job's spec exactly (a worker writes
the claim's spec there); otherwise the flags describe the job (``--dataset``, ``--benchmark``,
``--seeds``, ...) and are built into the same spec submit builds. The results document lands in
``--out``/results.json and a one-line summary is printed. ``pretrain`` and ``convert-long`` are
the other subcommands.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tqdm import tqdm  # noqa: E402
from transformers import HfArgumentParser  # noqa: E402

from biolm.contract import SLICE_FILE, CodeMismatch, CodeMissing, PretrainJob, check  # noqa: E402
from biolm.owner_only import owner_only_files  # noqa: E402
from workers.engine.exit_status import CODE_MISSING, PLUGIN_FAULT, replay_failure, report_failure  # noqa: E402
from workers.engine.finetune import finetune  # noqa: E402
from workers.engine.pretrain.run import REFUSAL_RECORD, PretrainArguments, pretrain, restarted_by_torchrun  # noqa: E402
from workers.engine.progress_file import ProgressFile  # noqa: E402
from workers.engine.run_settings import ARGUMENT_GROUPS, FinetuneSpec  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    owner_only_files()  # checkpoints, predictions and results it writes: its user's only, when run by hand too
    if argv and argv[0] == "pretrain":
        return pretrain_main(argv[1:])
    if argv and argv[0] == "convert-long":
        return convert_long_main(argv[1:])
    if argv and argv[0] == "score":
        return score_main(argv[1:])
    if not argv or argv[0] != "finetune":
        print("usage: python -m workers.engine finetune|pretrain|score|convert-long --help", file=sys.stderr)
        return 2
    parser = HfArgumentParser(ARGUMENT_GROUPS, prog="python -m workers.engine finetune")
    try:
        groups = parser.parse_args_into_dataclasses(argv[1:])
    except ValueError as exc:  # a group's __post_init__ check
        parser.error(str(exc))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        spec = FinetuneSpec.from_arguments(*groups)
    except ValueError as exc:  # the job the flags describe cannot be built (an unknown dataset, a --spec clash)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    bars: dict[str, tqdm] = {}
    progress_file = ProgressFile.from_environment()

    def progress_factory(label: str, run: int, runs: int):
        """The report of one training run: ``run`` of the ``runs`` the job makes (the worker's bar spans them)."""

        def report(step: int, total: int, loss: float | None) -> None:
            if progress_file is not None:
                progress_file.write(label, step, total, loss, run=run, runs=runs)
            bar = bars.get(label)
            if bar is None:
                bar = bars[label] = tqdm(total=total, desc=label, unit="step", leave=False)
            bar.update(step - bar.n)
            if loss is not None:
                bar.set_postfix(loss=f"{loss:.4f}")
            if step == total:
                bar.close()

        return report

    try:
        results = finetune(spec, progress_factory)
    except Exception as exc:  # bad input (status 1), a plugin's bug (3), or a crash (raised: a traceback)
        status = report_failure(exc, load_entrypoints=spec.load_entrypoints, dataset=spec.dataset)
        if status is None:
            raise
        return status
    if spec.part is not None and spec.part.part != "gather":
        print(f"{spec.dataset}: slice {spec.part} of the protocol written to {spec.out / SLICE_FILE}")
        return 0
    test = results["test"]
    if spec.data.test_gold_withheld:
        print(f"{results['dataset']}: test predictions written for the platform to score (gold withheld); "
              f"results in {spec.out / 'results.json'}")  # fmt: skip
        return 0
    if test is None:
        print(
            f"{results['dataset']}: {results['metric']} is undefined on this test split; "
            f"see {spec.out / 'results.json'}"
        )
        return 0
    print(headline(results) + f"; results in {spec.out / 'results.json'}")
    return 0


def pretrain_main(argv: list[str]) -> int:
    """``pretrain``: a recipe on a corpus; with ``--spec FILE`` (a pretraining job's spec) its recipe, steps
    and settings come from the job, and only the corpus file, the output folder and the hardware from flags."""
    try:
        argv = job_arguments(list(argv))
    except JobRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.status
    parser = HfArgumentParser(PretrainArguments, prog="python -m workers.engine pretrain")
    try:
        (args,) = parser.parse_args_into_dataclasses(argv)
    except ValueError as exc:
        parser.error(str(exc))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # Under torchrun a refusal is recorded, so that a restarted group replays it instead of running again.
    record = args.out / REFUSAL_RECORD if "TORCHELASTIC_RESTART_COUNT" in os.environ else None
    if record is not None and restarted_by_torchrun():
        status = replay_failure(record)
        if status is not None:
            return status
    elif record is not None:
        record.unlink(missing_ok=True)  # a group's first start: a refusal an earlier run recorded is not this one's
    bar = None
    progress_file = ProgressFile.from_environment()

    def progress(step: int, total: int, loss: float | None, tokens_per_second: float | None) -> None:
        nonlocal bar
        if progress_file is not None:
            progress_file.write("pretrain", step, total, loss, tokens_per_second=tokens_per_second)
        if bar is None:
            bar = tqdm(total=total, initial=step, desc="pretrain", unit="step")
        bar.update(step - bar.n)
        if loss is not None:
            bar.set_postfix(loss=f"{loss:.4f}", tokens_per_s=f"{tokens_per_second:,.0f}")

    try:
        report = pretrain(args, progress)
    except Exception as exc:  # bad input (status 1), a plugin's bug (3), or a crash (raised: a traceback)
        status = report_failure(exc, load_entrypoints=args.load_entrypoints, recipe=args.recipe, record=record)
        if status is None:
            raise
        return status
    finally:
        if bar is not None:
            bar.close()
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    if "rank" in report:  # a torchrun process other than the first: process 0 reports
        return 0
    training = report["training"]
    heldout = training["heldout_loss"]
    measured = (
        f"held-out MLM loss {heldout:.3f} (unigram baseline {report['unigram_baseline_loss']:.3f})"
        if heldout is not None
        else "no held-out block to measure (a larger corpus, or a larger heldout_share, gives one)"
    )
    print(f"{args.recipe}: {training['steps']} steps, {measured}; checkpoint in {args.out}")
    return 0


class JobRefused(Exception):
    """A pretraining job's spec that cannot run here; ``status`` is the exit status that says whose fault it is."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def job_arguments(argv: list[str]) -> list[str]:
    """``argv`` with ``--spec FILE`` replaced by the job's recipe, steps and settings, once its pins are checked."""
    if "--spec" not in argv:
        return argv
    at = argv.index("--spec")
    try:
        job = PretrainJob.from_json(json.loads(Path(argv[at + 1]).read_text(encoding="utf-8")))
    except (IndexError, OSError, ValueError) as exc:  # ContractError and JSONDecodeError are ValueErrors
        raise JobRefused(f"--spec: {exc}", 1) from None
    try:
        check(job.code).require()
    except (CodeMismatch, CodeMissing) as exc:
        raise JobRefused(str(exc), PLUGIN_FAULT if isinstance(exc, CodeMismatch) else CODE_MISSING) from None
    arguments = [*argv[:at], *argv[at + 2 :], "--recipe", job.recipe]
    arguments += ["--steps", str(job.steps)] if job.steps else []
    return arguments + (["--settings", json.dumps(dict(job.settings))] if job.settings else [])


def score_main(argv: list[str]) -> int:
    """``score --spec FILE --out DIR``: a score job's inputs (written by the platform) scored into DIR/scores.json."""
    import argparse

    from workers.engine.score_job import score_job

    parser = argparse.ArgumentParser(prog="python -m workers.engine score", description=score_main.__doc__)
    parser.add_argument("--spec", type=Path, required=True, help="the score inputs document (JSON)")
    parser.add_argument("--out", type=Path, required=True, help="the folder scores.json is written to")
    parser.add_argument(
        "--local_data", action="store_true", help="score on this host's own copy of the data (a data holder's)"
    )
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        inputs_dataset = json.loads(arguments.spec.read_text(encoding="utf-8")).get("dataset")
    except (OSError, ValueError, AttributeError) as exc:
        print(f"error: the score inputs {arguments.spec} cannot be read: {exc}", file=sys.stderr)
        return 1
    try:
        scores = score_job(arguments.spec, arguments.out, arguments.local_data)
    except Exception as exc:  # predictions that cannot be scored (1), a plugin's metric raising (3), or a crash
        status = report_failure(exc, load_entrypoints=True, dataset=inputs_dataset)
        if status is None:
            raise
        return status
    print(f"{inputs_dataset}: scored {len(scores.test_metrics)} withheld run(s); "
          f"{len(scores.resamples or [])} resamples; scores in {arguments.out / 'scores.json'}")  # fmt: skip
    return 0


def convert_long_main(argv: list[str]) -> int:
    """``convert-long``: a Longformer from a RoBERTa checkpoint, or a BigBird from a BERT one (Li et al. 2022)."""
    import argparse

    from workers.engine.pretrain.long_models import convert

    parser = argparse.ArgumentParser(
        prog="python -m workers.engine convert-long", description=convert_long_main.__doc__
    )
    parser.add_argument("--model", type=Path, required=True, help="The short checkpoint (RoBERTa or BERT).")
    parser.add_argument("--to", choices=("longformer", "big_bird"), required=True)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--attention-window", type=int, default=512, help="Longformer's local window.")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        convert(args.model, args.out, args.to, args.max_length, args.attention_window)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.to} of {args.max_length} tokens in {args.out}; continue its MLM with --recipe clinical-longformer")
    return 0


def headline(results: dict) -> str:
    """One line: the protocol's reported statistic first (Lewis et al. 2020 report medians), then the others."""
    test, reported = results["test"], results["reported"]
    folds = results.get("cross_validation")
    over = (
        f"{test['n']} folds (fold {folds['selection_fold']} chose the stopping point)"
        if folds
        else f"{test['n']} seeds"
    )
    hp = results["chosen_hyperparameters"]
    point = f"lr {hp['learning_rate']:g}, batch {hp['batch_size']}, {hp['epochs']} epochs"
    if hp.get("max_steps"):
        point += f", stopped at step {hp['max_steps']}"
    return (
        f"{results['dataset']}: test {results['metric']} {reported['statistic']} {reported['value']:.2f} over {over} "
        f"(mean {test['mean']:.2f} ± {test['std']:.2f}, median {test['median']:.2f}) by the "
        f"{results['protocol']['name']} protocol at {point}"
    )


if __name__ == "__main__":
    sys.exit(main())
