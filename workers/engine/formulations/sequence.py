"""Sequence-level tasks on the [CLS] vector: single texts, pairs, multi-label, regression.

Gu et al. 2021, section 5: sentence pairs are joined with [SEP] (BIOSSES, PubMedQA, BioASQ, MedNLI);
multi-label documents (HoC, OpenI) get one sigmoid per label, decided at logit > 0; regression
(BIOSSES, clinical STS) is a single output trained with mean squared error. Relations in the
BLURB form arrive with their entities already dummified (``@GENE$``), so they are single texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, PreTrainedModel

from workers.engine.encoding import Feature, decode_sequences, encode_sequences
from workers.engine.formulations.base import Formulation, ModelSource

PROBLEM_TYPES = {"multi": "multi_label_classification", "regression": "regression"}


class SequenceClassification(Formulation):
    name = "sequence-classification"
    schemas = ("classification", "regression")

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        pair_key = "text_pair" if self.schema != "relation" else None
        return encode_sequences(rows, self.tokenizer, self.labels, self.max_length, pair_key=pair_key)

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        return self.cls_classifier(source)

    def cls_classifier(self, source: ModelSource) -> PreTrainedModel:
        """The architecture's own classifier on [CLS] for this label space (relations and long documents too)."""
        return source.head_model(
            AutoModelForSequenceClassification,
            num_labels=self.labels.size,
            id2label=dict(enumerate(self.labels.names)),
            label2id=self.labels.index(),
            problem_type=PROBLEM_TYPES.get(self.labels.kind, "single_label_classification"),
        )

    def decode(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], model: torch.nn.Module
    ) -> list:
        return decode_sequences(np.stack(logits), self.labels)
