"""``python -m workers.engine finetune ...``: fine-tune and evaluate one model on one dataset.

Arguments are dataclass groups (transformers' HfArgumentParser, as run_ner.py does); the
results JSON lands in ``--out``/results.json and a one-line summary is printed.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tqdm import tqdm  # noqa: E402
from transformers import HfArgumentParser  # noqa: E402

from workers.engine.finetune import FinetuneSpec, finetune  # noqa: E402
from workers.engine.formulations import TaskOptions  # noqa: E402


@dataclass
class ModelArguments:
    model: Path | None = field(default=None, metadata={"help": "A local Hugging Face checkpoint directory."})
    architecture: str | None = field(
        default=None, metadata={"help": "Build from scratch: NAME[:preset], e.g. bert:tiny or bioformer:8l."}
    )


@dataclass
class DataArguments:
    dataset: str = field(metadata={"help": "Dataset slug, e.g. ncbi-disease (see manage.py datasets)."})
    data_dir: Path | None = field(
        default=None, metadata={"help": "Directory of the official files (default: under BIOLM_DATA_DIR)."}
    )
    max_length: int = field(default=512, metadata={"help": "Maximum tokens per input; longer token inputs are split."})
    max_train_examples: int | None = field(
        default=None, metadata={"help": "Use only the first N training examples (quick runs; recorded in results)."}
    )
    max_eval_examples: int | None = field(
        default=None, metadata={"help": "Use only the first N dev and test examples (quick runs; recorded in results)."}
    )


@dataclass
class ProtocolArguments:
    out: Path = field(metadata={"help": "Directory for results.json."})
    seeds: int | None = field(default=None, metadata={"help": "Seeds on test (default 5; 10 for small sets)."})
    grid: str = field(default="blurb", metadata={"help": "blurb (lr x batch grid on dev) or single."})
    epochs: int | None = field(default=None, metadata={"help": "Epochs (default: by task type)."})
    learning_rate: float | None = field(default=None, metadata={"help": "Fix the learning rate (one-point grid)."})
    batch_size: int | None = field(default=None, metadata={"help": "Fix the batch size (one-point grid)."})
    device: str = field(default="auto", metadata={"help": "auto, cpu, cuda or cuda:N."})
    precision: str = field(default="auto", metadata={"help": "auto (bf16 where native), bf16 or fp32."})
    fresh: bool = field(
        default=False,
        metadata={
            "help": "Retrain every run, even those an earlier (e.g. interrupted) invocation stored in --out/runs."
        },
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "finetune":
        print("usage: python -m workers.engine finetune --help", file=sys.stderr)
        return 2
    parser = HfArgumentParser(
        (ModelArguments, DataArguments, ProtocolArguments, TaskOptions), prog="python -m workers.engine finetune"
    )
    try:
        model_args, data_args, protocol, task = parser.parse_args_into_dataclasses(argv[1:])
    except ValueError as exc:  # a TaskOptions check
        parser.error(str(exc))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        spec = FinetuneSpec(
            dataset=data_args.dataset,
            out=protocol.out,
            model_dir=model_args.model,
            architecture=model_args.architecture,
            data_dir=data_args.data_dir,
            seeds=protocol.seeds,
            grid=protocol.grid,
            epochs=protocol.epochs,
            learning_rate=protocol.learning_rate,
            batch_size=protocol.batch_size,
            max_length=data_args.max_length,
            max_train_examples=data_args.max_train_examples,
            max_eval_examples=data_args.max_eval_examples,
            device=protocol.device,
            precision=protocol.precision,
            fresh=protocol.fresh,
            task=task,
        )
    except ValueError as exc:
        parser.error(str(exc))
    bars: dict[str, tqdm] = {}

    def progress_factory(label: str):
        def report(step: int, total: int, loss: float | None) -> None:
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
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    test = results["test"]
    if test is None:
        print(
            f"{results['dataset']}: {results['metric']} is undefined on this test split; "
            f"see {spec.out / 'results.json'}"
        )
        return 0
    print(
        f"{results['dataset']}: test {results['metric']} {test['mean']:.2f} ± {test['std']:.2f} "
        f"(median {test['median']:.2f}, {test['n']} seeds) at {results['chosen_hyperparameters']}; "
        f"results in {spec.out / 'results.json'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
