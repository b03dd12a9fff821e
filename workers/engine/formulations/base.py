"""What every task formulation provides: examples in, model inputs out, and back to scored predictions.

A formulation is the paper's way of casting a dataset's task onto an encoder (Gu et al. 2021,
section 5; Yang et al. 2022, Methods; Li et al. 2022, section 3.5): how examples become token
ids, which head sits on the encoder, how the head's outputs become per-example predictions,
and how those are scored. The training loop (:mod:`workers.engine.training`) only sees
:class:`Feature` lists, a collate function and a model whose output has ``.loss`` and
``.logits``; everything task-specific lives behind this interface, one module per family, so
adding a formulation touches no other.
"""

from __future__ import annotations

import abc
import json
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from transformers import (
    AutoModel,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.models.auto.auto_factory import _get_model_class

from biolm.contract.task_options import TaskOptions
from biolm.errors import first_line
from biolm.specs import DatasetSpec
from workers.engine.architectures import attention_implementation, build_config, load_config, parse_architecture
from workers.engine.batching import collate, computed_tokens
from workers.engine.encoding import Feature, LabelSpace
from workers.engine.prediction_scoring import class_counts, score_predictions
from workers.engine.task import Task

LONG_DOCUMENT_VARIANTS: dict[type, type] = {}


def declare_long_document_variant(formulation: type[Formulation], variant: type[Formulation]) -> None:
    """``variant`` reads whole documents in ``formulation``'s place (``--long-documents snippets|full``).

    Declared by the variant's module, which subclasses the formulation: the formulation never
    imports its variant, so the two modules do not import each other.
    """
    LONG_DOCUMENT_VARIANTS[formulation] = variant


WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"  # a sharded checkpoint's map of tensors to files


def read_checkpoint_weights(model_dir: Path) -> dict[str, torch.Tensor] | None:
    """Every tensor of a checkpoint's safetensors weights, read from disk into CPU memory.

    None when the directory names its weights otherwise (the per-run path then lets transformers
    find them). Sharded checkpoints are read shard by shard, as their index lists them.
    """
    index = Path(model_dir) / WEIGHTS_INDEX
    if index.is_file():
        files = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    elif (Path(model_dir) / WEIGHTS_FILE).is_file():
        files = [WEIGHTS_FILE]
    else:
        return None
    state: dict[str, torch.Tensor] = {}
    for name in files:
        state.update(load_file(Path(model_dir) / name, device="cpu"))
    return state


class PristineWeights:
    """A checkpoint's weights read from disk once per job, and a fresh copy for each run's model.

    A job trains the same checkpoint for every grid point, seed and fold; reading it again for
    each run costs a BERT-base 440 MB of I/O and deserialisation per run. The first run reads it
    (:func:`read_checkpoint_weights`), later runs copy the tensors kept in CPU memory. Each run
    gets its own copy because transformers adopts a given state dict's tensors as the model's
    parameters (no copy), and training would otherwise change the pristine weights.
    """

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = Path(model_dir)
        self._state: dict[str, torch.Tensor] | None = None
        self._unreadable = False

    def fresh_state_dict(self) -> dict[str, torch.Tensor] | None:
        """A copy of the pristine weights (read on first use); None if they are not in the standard files."""
        if self._state is None and not self._unreadable:
            self._state = read_checkpoint_weights(self.model_dir)
            self._unreadable = self._state is None
        if self._state is None:
            return None
        return {name: tensor.clone() for name, tensor in self._state.items()}


@dataclass(frozen=True)
class ModelSource:
    """Where the encoder comes from: a local checkpoint directory or an architecture preset.

    ``weights``, when given, holds the checkpoint's weights in memory for a whole job: each model
    is then built from a copy of them instead of from disk, with the same head initialisation
    (transformers loads a state dict and a file through the same path, initialising from the
    global generator only what the checkpoint lacks).
    """

    model_dir: Path | None = None
    architecture: str | None = None  # "bert:tiny"
    vocab_size: int | None = None  # the tokenizer's, for models built from scratch
    weights: PristineWeights | None = field(default=None, compare=False, repr=False)

    def config(self, **overrides: Any) -> PretrainedConfig:
        """The encoder's config with the task's settings (labels, dropout 0.1 when built from scratch)."""
        if self.model_dir is not None:
            config = load_config(self.model_dir)
            for key, value in overrides.items():
                setattr(config, key, value)
            return config
        return build_config(
            *parse_architecture(self.architecture),
            vocab_size=self.vocab_size,
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            **overrides,
        )

    def head_model(self, auto_class: type, model_kwargs: dict | None = None, **overrides: Any) -> PreTrainedModel:
        """``auto_class`` (``AutoModelForTokenClassification``, ...) with its encoder from this source.

        ``overrides`` go to the config, ``model_kwargs`` to the model's constructor. A checkpoint
        may carry another task's head (or none): its head is replaced, never reused.
        """
        config = self.config(**overrides)
        attention = attention_implementation(config)
        # On the meta device (parameter counts) the checkpoint's config is enough: no weights are read.
        if self.model_dir is not None and torch.get_default_device().type != "meta":
            options = {
                "config": config,
                "use_safetensors": True,  # a pickle is never unpickled, whatever transformers' defaults become
                "ignore_mismatched_sizes": True,
                "attn_implementation": attention,
                **(model_kwargs or {}),
            }
            try:
                return self._pretrained(auto_class, options)
            except (OSError, RuntimeError, SafetensorError, pickle.UnpicklingError) as exc:  # truncated or foreign
                raise ValueError(f"--model {self.model_dir}: its weights cannot be loaded: {first_line(exc)}") from exc
        return auto_class.from_config(config, attn_implementation=attention, **(model_kwargs or {}))

    def _pretrained(self, auto_class: type, options: dict) -> PreTrainedModel:
        """The checkpoint's model from the job's in-memory weights when it has them, else from disk."""
        state = self.weights.fresh_state_dict() if self.weights is not None else None
        model_class = _built_in_class(auto_class, options["config"])
        if state is None or model_class is None:
            return auto_class.from_pretrained(
                str(self.model_dir),
                local_files_only=True,
                trust_remote_code=False,  # never the checkpoint's own code, and never a prompt asking
                **options,
            )
        model = model_class.from_pretrained(None, state_dict=state, **options)
        model.config.name_or_path = str(self.model_dir)  # as a load from the directory records it
        return model

    def encoder(self, **overrides: Any) -> PreTrainedModel:
        """The bare encoder (``AutoModel``, no pooler), for formulations that bring their own head.

        Without the pooler every parameter gets a gradient, which distributed training needs.
        """
        return self.head_model(AutoModel, model_kwargs={"add_pooling_layer": False}, **overrides)


def _built_in_class(auto_class: type, config: PretrainedConfig) -> type | None:
    """The transformers class ``auto_class`` builds for ``config`` (never a checkpoint's own code); None if none."""
    mapping = getattr(auto_class, "_model_mapping", None)
    if mapping is None:
        return auto_class  # already a concrete class
    if type(config) not in mapping or config.sub_configs.get("text_config") is not None:
        return None  # the load from disk says why in transformers' own words, or swaps the sub-config
    return _get_model_class(config, mapping)


class Formulation(abc.ABC):
    """One way of casting a task onto an encoder. Subclasses override what differs.

    A task type (``biolm.specs.TaskTypeSpec``) names its formulation class, built-in or a
    plugin's. ``schemas`` lists the canonical schemas (``biolm.schemas``) the formulation accepts.
    """

    name: ClassVar[str] = "base"
    schemas: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        task: Task,
        labels: LabelSpace,
        tokenizer: PreTrainedTokenizerBase,
        options: TaskOptions,
        max_length: int,
        source: ModelSource | None = None,
    ) -> None:
        self.task = task
        self.labels = labels
        self.tokenizer = tokenizer
        self.options = options
        self.max_length = max_length
        self.source = source  # the model to come, for formulations that must know its length first
        self.setup()

    @classmethod
    def select(cls, task: Task, options: TaskOptions) -> type[Formulation]:
        """The formulation to use for ``options``: this one, or its long-document variant.

        Formulations without a variant refuse ``--long-documents snippets|full``.
        """
        if options.long_documents == "truncate":
            return cls
        variant = cls.long_document_variant()
        if variant is None:
            raise ValueError(
                f"--long-documents {options.long_documents} applies to classification and regression datasets, but "
                f"{task.dataset.slug!r} uses the {task.task_type.schema} schema: leave --long-documents at truncate "
                "(token tasks are split into windows of whole words, QA contexts into --qa-window windows, with "
                "nothing dropped)"
            )
        return variant

    @classmethod
    def long_document_variant(cls) -> type[Formulation] | None:
        """The formulation that reads whole documents in this one's place (Li et al. 2022, section 3.5), if any.

        The variant declares itself (:func:`declare_long_document_variant`); a subclass inherits its
        parent's unless it says otherwise.
        """
        return next((LONG_DOCUMENT_VARIANTS[klass] for klass in cls.__mro__ if klass in LONG_DOCUMENT_VARIANTS), None)

    @property
    def dataset(self) -> DatasetSpec:
        return self.task.dataset

    def setup(self) -> None:  # noqa: B027 -- optional: most formulations need no setup
        """Check the options against the dataset and derive what encoding needs; raise ValueError to refuse."""

    @property
    def schema(self) -> str:
        return self.task.task_type.schema

    def describe(self) -> dict:
        """What the results JSON records about the formulation (name and the options it uses)."""
        return {"name": self.name}

    @abc.abstractmethod
    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        """Model inputs for one split's examples; ``Feature.example`` points back into ``rows``."""

    @abc.abstractmethod
    def build_model(self, source: ModelSource) -> torch.nn.Module:
        """A fresh model whose forward takes a collated batch and returns ``.loss`` and ``.logits``."""

    def collate(self, features: Sequence[Feature], pad_id: int) -> dict[str, torch.Tensor]:
        """One padded batch (``labels`` included); inference drops ``labels``."""
        return collate(features, pad_id)

    def computed_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        """Token positions the encoder really computes for ``batch``, padding included (the padding overhead's base)."""
        return computed_tokens(batch)

    @abc.abstractmethod
    def decode(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], model: torch.nn.Module
    ) -> list:
        """Per-example predictions in the form :func:`score` and the results JSON use.

        ``logits`` holds one array per feature: ``(length, ...)`` for per-token outputs (padding
        removed), otherwise the row of the batch's ``(batch, ...)`` output.
        """

    def score(self, rows: Sequence[dict], predicted: Sequence, logits: Sequence[np.ndarray]) -> dict:
        """``{metric slug: value or None}`` for the dataset's metric and its task type's companions."""
        stacked = np.stack(logits) if logits and np.ndim(logits[0]) == 1 else None
        return score_predictions(self.task, self.labels, rows, predicted, stacked)

    def class_counts(
        self, rows: Sequence[dict], predicted: Sequence, typed_gold: Sequence | None = None
    ) -> dict | None:
        """``{class: Counts}`` of the dataset's metric on these predictions (None: it has no classes).

        Read exactly as :meth:`score` reads them, so the classes pool to the score's micro value;
        ``typed_gold`` as :func:`workers.engine.prediction_scoring.class_counts` takes it.
        """
        return class_counts(self.task, self.labels, rows, predicted, typed_gold=typed_gold)
