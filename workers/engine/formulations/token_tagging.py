"""Token classification (NER, de-identification, PICO): a linear head on every first sub-token.

Seed 004 section 5: each word's first sub-token carries the word's tag and the model predicts
per word; inputs longer than the model are split into windows of whole words
(:func:`workers.engine.encoding.encode_token_tagging`) so no gold word is ever dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import AutoModelForTokenClassification

from workers.engine.encoding import Feature, decode_token_tagging, encode_token_tagging
from workers.engine.formulations.base import Formulation, ModelSource


class TokenTagging(Formulation):
    name = "token-tagging"
    schemas = ("token-tagging",)

    def describe(self) -> dict:
        return {"name": self.name, "tagging_scheme": self.options.tagging_scheme, "crf": self.options.crf}

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        return encode_token_tagging(rows, self.tokenizer, self.labels, self.max_length)

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        return source.head_model(
            AutoModelForTokenClassification,
            num_labels=self.labels.size,
            id2label=dict(enumerate(self.labels.names)),
            label2id=self.labels.index(),
        )

    def decode(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], model: torch.nn.Module
    ) -> list[list[str]]:
        return decode_token_tagging(features, logits, rows, self.labels)
