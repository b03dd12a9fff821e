"""The fine-tuning spec: one dataclass composed of the CLI's argument groups, sent across processes as JSON.

``python -m workers.engine finetune`` parses exactly these groups (transformers'
``HfArgumentParser``, as run_ner.py does), each validated in ``__post_init__``. The job system
sends the spec to GPU workers as JSON: :meth:`FinetuneSpec.to_json` and
:meth:`FinetuneSpec.from_json` round-trip, and the JSON carries :data:`SPEC_VERSION` so a worker
refuses a spec written for another version instead of misreading it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from biolm.specs import PROTOCOL_NAMES
from workers.engine.formulations.base import TaskOptions

SPEC_VERSION = 2  # 2: --protocol and --benchmark; --grid is full or single
GRIDS = ("full", "single")
DATA_FORMATS = ("official", "canonical")
PRECISIONS = ("auto", "bf16", "fp32")


@dataclass
class ModelArguments:
    """Where the encoder comes from."""

    model: Path | None = field(default=None, metadata={"help": "A local Hugging Face checkpoint directory."})
    architecture: str | None = field(
        default=None, metadata={"help": "Build from scratch: NAME[:preset], e.g. bert:tiny or bioformer:8l."}
    )

    def __post_init__(self) -> None:
        if (self.model is None) == (self.architecture is None):
            raise ValueError("give exactly one of --model (a checkpoint directory) or --architecture NAME[:preset]")
        if self.model is not None:
            self.model = Path(self.model)

    @property
    def name(self) -> str:
        return str(self.model) if self.model is not None else str(self.architecture)


@dataclass
class DataArguments:
    """Which dataset, where its files are, and how much of it to use."""

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
        if self.max_length < 8:
            raise ValueError("--max-length must be at least 8")
        if self.data_format not in DATA_FORMATS:
            raise ValueError(f"--data-format must be one of {', '.join(DATA_FORMATS)}, not {self.data_format!r}")
        if self.data_format == "canonical" and self.data_dir is None:
            raise ValueError("--data-format canonical reads the platform's export: give its folder with --data-dir")
        for name in ("max_train_examples", "max_eval_examples"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")


@dataclass
class ProtocolArguments:
    """How hyperparameters are chosen and how many seeds run, and where the results go."""

    out: Path = field(metadata={"help": "Directory for results.json."})
    protocol: str | None = field(
        default=None,
        metadata={
            "help": f"The paper's protocol: {', '.join(PROTOCOL_NAMES)} (default: the --benchmark's, else blurb)."
        },
    )
    benchmark: str | None = field(
        default=None,
        metadata={"help": "Score as this benchmark does: its protocol, and its metric for the dataset."},
    )
    seeds: int | None = field(
        default=None, metadata={"help": "Seeds on test (default: the dataset's or its task type's, usually 5)."}
    )
    first_seed: int = field(default=42, metadata={"help": "The first seed; the others follow it."})
    grid: str = field(
        default="full",
        metadata={"help": "full (the protocol's grid) or single (its largest lr and batch, for quick runs)."},
    )
    epochs: int | None = field(default=None, metadata={"help": "Epochs (default: the dataset's or its task type's)."})
    learning_rate: float | None = field(default=None, metadata={"help": "Fix the learning rate (one-point grid)."})
    batch_size: int | None = field(default=None, metadata={"help": "Fix the batch size (one-point grid)."})
    eval_batch_size: int = field(default=64, metadata={"help": "Batch size for dev and test predictions."})
    device: str = field(default="auto", metadata={"help": "auto, cpu, cuda or cuda:N."})
    precision: str = field(default="auto", metadata={"help": "auto (bf16 where native), bf16 or fp32."})
    fresh: bool = field(
        default=False,
        metadata={
            "help": "Retrain every run, even those an earlier (e.g. interrupted) invocation stored in --out/runs."
        },
    )

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.precision not in PRECISIONS:
            raise ValueError(f"--precision must be auto, bf16 or fp32, not {self.precision!r}")
        if self.protocol is not None and self.protocol not in PROTOCOL_NAMES:
            raise ValueError(f"--protocol must be one of {', '.join(PROTOCOL_NAMES)}, not {self.protocol!r}")
        if self.grid not in GRIDS:
            raise ValueError(f"--grid must be one of {', '.join(GRIDS)}, not {self.grid!r}")
        for name in ("seeds", "epochs", "batch_size", "learning_rate"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be positive, not {value}")
        if self.eval_batch_size < 1:
            raise ValueError("--eval-batch-size must be at least 1")


ARGUMENT_GROUPS = (ModelArguments, DataArguments, ProtocolArguments, TaskOptions)


@dataclass
class FinetuneSpec:
    """Everything a fine-tuning job needs; immutable once a job is queued."""

    VERSION: ClassVar[int] = SPEC_VERSION

    model: ModelArguments
    data: DataArguments
    protocol: ProtocolArguments
    task: TaskOptions = field(default_factory=TaskOptions)
    load_entrypoints: bool = True  # installed plugins too (tests and workers may turn them off)

    @classmethod
    def build(cls, **values: Any) -> FinetuneSpec:
        """A spec from flat keyword arguments, each sent to the group that has it (for notebooks and tests).

        ``FinetuneSpec.build(dataset="ncbi-disease", out=path, architecture="bert:tiny", crf=True)``
        """
        groups: dict[str, dict[str, Any]] = {}
        for name, group in zip(("model", "data", "protocol", "task"), ARGUMENT_GROUPS, strict=True):
            names = {f.name for f in fields(group)}
            groups[name] = {key: values.pop(key) for key in list(values) if key in names}
        load_entrypoints = values.pop("load_entrypoints", True)
        if values:
            raise TypeError(f"no fine-tuning setting called {', '.join(sorted(values))}")
        return cls(
            model=ModelArguments(**groups["model"]),
            data=DataArguments(**groups["data"]),
            protocol=ProtocolArguments(**groups["protocol"]),
            task=TaskOptions(**groups["task"]),
            load_entrypoints=load_entrypoints,
        )

    def to_dict(self) -> dict[str, Any]:
        groups = {
            name: _plain(dataclasses.asdict(getattr(self, name))) for name in ("model", "data", "protocol", "task")
        }
        return {"version": self.VERSION, **groups, "load_entrypoints": self.load_entrypoints}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> FinetuneSpec:
        """The spec ``to_json`` wrote; a spec of another version or with unknown settings is refused."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"a fine-tuning spec must be JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError("a fine-tuning spec must be a JSON object")
        version = data.pop("version", None)
        if version != cls.VERSION:
            raise ValueError(f"this engine reads fine-tuning spec version {cls.VERSION}, not {version!r}")
        unknown = sorted(set(data) - {"model", "data", "protocol", "task", "load_entrypoints"})
        if unknown:
            raise ValueError(f"unknown fine-tuning spec sections {unknown}")
        try:
            return cls(
                model=ModelArguments(**data.get("model", {})),
                data=DataArguments(**data.get("data", {})),
                protocol=ProtocolArguments(**data.get("protocol", {})),
                task=TaskOptions(**data.get("task", {})),
                load_entrypoints=bool(data.get("load_entrypoints", True)),
            )
        except TypeError as exc:  # an unknown or missing setting inside a section
            raise ValueError(f"fine-tuning spec: {exc}") from None


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {key: str(value) if isinstance(value, Path) else value for key, value in values.items()}
