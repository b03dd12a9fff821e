"""A fine-tuning run: the job's spec (the contract) plus where its files are on this machine.

What to run is a :class:`~biolm.contract.FinetuneJob`, the same document the platform builds at
submit and stores on the job: the dataset, the protocol, the metric, the overrides, the task
options, the pinned code. A worker hands it to the engine as a file (``--spec FILE``); a person
describes it with flags (``--dataset``, ``--benchmark``, ``--seeds``, ...), which
:func:`biolm.job_contracts.finetune_job` turns into the same document. Where things are (the local
checkpoint, the data folder, the output folder, the device) is not part of it: those are the
argument groups below, parsed by transformers' ``HfArgumentParser`` as run_ner.py does, each
checked in ``__post_init__``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from biolm.contract import ContractError, FinetuneJob, ModelInput, Overrides, Slice, TaskOptions
from biolm.job_contracts import finetune_job
from biolm.plugins import Contributions, collect_contributions, get_plugin_manager

DATA_FORMATS = ("official", "canonical")
DEFAULT_MAX_LENGTH = 512
DEFAULT_FIRST_SEED = 42


@dataclass
class ModelArguments:
    """Where the encoder is on this machine."""

    model: Path | None = field(default=None, metadata={"help": "A local Hugging Face checkpoint directory."})
    architecture: str | None = field(
        default=None, metadata={"help": "Build from scratch: NAME[:preset], e.g. bert:tiny or bioformer:8l."}
    )

    def __post_init__(self) -> None:
        if self.model is not None and self.architecture is not None:
            raise ValueError("give one of --model (a checkpoint directory) or --architecture NAME[:preset], not both")
        if self.model is not None:
            self.model = Path(self.model)

    @property
    def name(self) -> str:
        return str(self.model) if self.model is not None else str(self.architecture)


@dataclass
class DataArguments:
    """Which dataset (without --spec), and where its files are on this machine."""

    dataset: str | None = field(
        default=None, metadata={"help": "Dataset slug, e.g. ncbi-disease (see manage.py datasets)."}
    )
    data_dir: Path | None = field(
        default=None, metadata={"help": "Directory of the official files (default: under BIOLM_DATA_DIR)."}
    )
    test_gold_withheld: bool = field(
        default=False,
        metadata={
            "help": "The test split's gold is a placeholder (the platform keeps the real labels): predict test, "
            "score nothing on it, and write the predictions (and sequence-level scores) to the results."
        },
    )
    data_format: str = field(
        default="official",
        metadata={
            "help": "official (the dataset's own files, read by its adapter) or canonical ({train,dev,test}.jsonl "
            "in the dataset's schema, as the platform sends a worker)."
        },
    )

    def __post_init__(self) -> None:
        if self.data_dir is not None:
            self.data_dir = Path(self.data_dir)
        if self.data_format not in DATA_FORMATS:
            raise ValueError(f"--data-format must be one of {', '.join(DATA_FORMATS)}, not {self.data_format!r}")


@dataclass
class RunArguments:
    """Which protocol (without --spec), where the results go, and on what hardware."""

    out: Path = field(metadata={"help": "Directory for results.json."})
    spec: Path | None = field(
        default=None,
        metadata={"help": "A job's spec (JSON, as the platform stores it): run exactly that job."},
    )
    protocol: str | None = field(
        default=None,
        metadata={"help": "The paper's protocol, e.g. blurb or lewis2020 (default: the --benchmark's, else blurb)."},
    )
    benchmark: str | None = field(
        default=None,
        metadata={"help": "Score as this benchmark does: its protocol, and its metric for the dataset."},
    )
    eval_batch_size: int = field(default=64, metadata={"help": "Batch size for dev and test predictions."})
    device: str = field(default="auto", metadata={"help": "auto, cpu, cuda or cuda:N."})
    fresh: bool = field(
        default=False,
        metadata={
            "help": "Retrain every run, even those an earlier (e.g. interrupted) invocation stored in --out/runs."
        },
    )

    slice: str | None = field(
        default=None,
        metadata={
            "help": "Run one slice of the protocol (workers.engine.protocol): point:K, select, seed:K, fold:F or "
            "gather. It writes --out/slice.json (the gather: results.json)."
        },
    )
    slices: Path | None = field(
        default=None,
        metadata={"help": "The folder of the earlier slices' documents (point-K.json, select.json, ...)."},
    )

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.spec is not None:
            self.spec = Path(self.spec)
        if self.slices is not None:
            self.slices = Path(self.slices)
        if self.eval_batch_size < 1:
            raise ValueError("--eval-batch-size must be at least 1")


ARGUMENT_GROUPS = (ModelArguments, DataArguments, RunArguments, Overrides, TaskOptions)


@dataclass
class FinetuneSpec:
    """Everything a fine-tuning run needs: the job (immutable once queued) and this machine's paths."""

    job: FinetuneJob
    model: ModelArguments
    run: RunArguments
    data: DataArguments = field(default_factory=DataArguments)
    load_entrypoints: bool = True  # installed plugins too (tests and workers may turn them off)
    extra_plugins: tuple[tuple[str, Any], ...] = ()  # (name, plugin) registered in this process (a notebook's)

    def __post_init__(self) -> None:
        trains = self.part is None or self.part.trains  # the selection and the gather read slice documents only
        if self.model.model is None and self.model.architecture is None:
            if self.job.model.architecture:
                self.model.architecture = self.job.model.architecture
            elif self.job.model.directory:
                self.model.model = Path(self.job.model.directory)
            elif trains:
                raise ValueError("the job's model is stored on the platform: give the downloaded folder with --model")
        if trains and self.data.data_format == "canonical" and self.data.data_dir is None:
            raise ValueError("--data-format canonical reads the platform's export: give its folder with --data-dir")

    @property
    def part(self) -> Slice | None:
        """The slice of the protocol to run: ``--slice``, else the job's own; None runs all of it."""
        try:
            return Slice.parse(self.run.slice) if self.run.slice is not None else self.job.part
        except ContractError as exc:
            raise ValueError(f"--slice: {exc}") from None

    @property
    def overrides(self) -> Overrides:
        return self.job.overrides

    @property
    def dataset(self) -> str:
        return self.job.dataset

    @property
    def max_length(self) -> int:
        return self.job.overrides.max_length or DEFAULT_MAX_LENGTH

    @property
    def first_seed(self) -> int:
        first = self.job.overrides.first_seed
        return DEFAULT_FIRST_SEED if first is None else first

    @property
    def precision(self) -> str:
        return self.job.overrides.precision or "auto"

    @property
    def out(self) -> Path:
        return self.run.out

    @classmethod
    def from_arguments(
        cls,
        model: ModelArguments,
        data: DataArguments,
        run: RunArguments,
        overrides: Overrides,
        task: TaskOptions,
        *,
        preview: bool = False,
        load_entrypoints: bool = True,
        extra_plugins: tuple[tuple[str, Any], ...] = (),
    ) -> FinetuneSpec:
        """The run the command line describes: a ``--spec`` file's job, or the job its flags describe."""
        if run.spec is not None:
            described = [name for name in ("dataset",) if getattr(data, name)] + [
                name for name in ("protocol", "benchmark") if getattr(run, name)
            ]
            if described or overrides.custom or task.to_json():
                raise ValueError(
                    f"--spec gives the whole job: leave out --{', --'.join(described) or 'the overrides'}"
                    if described
                    else "--spec gives the whole job: leave out the overrides and task options"
                )
            return cls(read_job(run.spec), model, run, data, load_entrypoints, extra_plugins)
        if not data.dataset:
            raise ValueError("give --dataset (or a job's --spec FILE)")
        if model.model is None and model.architecture is None:
            raise ValueError("give exactly one of --model (a checkpoint directory) or --architecture NAME[:preset]")
        source = ModelInput(directory=str(model.model)) if model.model else ModelInput(architecture=model.architecture)
        manager = get_plugin_manager(load_entrypoints=load_entrypoints, extra_plugins=extra_plugins)
        job = build_job(collect_contributions(manager), data.dataset, source, run, overrides, task, preview)
        return cls(job, model, run, data, load_entrypoints, extra_plugins)

    @classmethod
    def build(cls, **values: Any) -> FinetuneSpec:
        """A run from flat keyword arguments, each sent to the group that has it (for notebooks and tests).

        ``FinetuneSpec.build(dataset="ncbi-disease", out=path, architecture="bert:tiny", crf=True, seeds=1)``
        """
        groups = []
        for group in ARGUMENT_GROUPS:
            names = {f.name for f in fields(group)}
            groups.append(group(**{key: values.pop(key) for key in list(values) if key in names}))
        options = {key: values.pop(key) for key in ("preview", "load_entrypoints", "extra_plugins") if key in values}
        if values:
            raise TypeError(f"no fine-tuning setting called {', '.join(sorted(values))}")
        return cls.from_arguments(*groups, **options)


def build_job(
    contributions: Contributions,
    dataset: str,
    model: ModelInput,
    run: RunArguments,
    overrides: Overrides,
    task: TaskOptions,
    preview: bool = False,
) -> FinetuneJob:
    """The command line's job, built as submit builds the platform's (a :class:`ValueError` when refused)."""
    try:
        return finetune_job(
            contributions, dataset=dataset, model=model, benchmark=run.benchmark, protocol=run.protocol,
            overrides=overrides, task_options=task, preview=preview,
        )  # fmt: skip
    except ContractError as exc:
        raise ValueError(str(exc)) from None


def read_job(path: Path) -> FinetuneJob:
    """The fine-tuning job written in ``path`` (a worker writes the claim's spec there)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON spec: {exc}") from None
    try:
        return FinetuneJob.from_json(data)
    except ContractError as exc:
        raise ValueError(f"{path}: {exc}") from None
