"""Turn canonical examples into model inputs, and model outputs back into per-example predictions.

Token tasks label the first sub-token of each word and predict per word (Gu et al.
2021, section 5). Inputs longer than the model are split into windows of whole words, never
truncated: the Hugging Face NER example silently drops gold entities past the maximum
length from scoring (METRICS.md), which inflates F1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from transformers import PreTrainedTokenizerBase

IGNORE = -100


@dataclass
class Feature:
    """One model input: ``input_ids`` (with special tokens), optional segment ids, and targets."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    labels: list[int] | int | float | list[float]
    example: int  # index of the example it came from
    words: list[int] = field(default_factory=list)  # token tasks: word index of each labelled position

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True)
class LabelSpace:
    """Label names <-> ids; ``kind`` is single, multi (multi-label) or regression."""

    names: tuple[str, ...]
    kind: str = "single"

    @property
    def size(self) -> int:
        return 1 if self.kind == "regression" else len(self.names)

    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}


def encode_token_tagging(
    examples: Sequence[dict], tokenizer: PreTrainedTokenizerBase, labels: LabelSpace, max_length: int
) -> list[Feature]:
    """Windows of whole words, each at most ``max_length`` tokens with [CLS] and [SEP]."""
    label_ids = labels.index()
    budget = max_length - 2  # [CLS] ... [SEP] (<s> ... </s> for RoBERTa-style vocabularies)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    encoded = tokenizer([ex["tokens"] for ex in examples], is_split_into_words=True, add_special_tokens=False)
    features = []
    for index, example in enumerate(examples):
        pieces: list[list[int]] = [[] for _ in example["tokens"]]
        for token_id, word in zip(encoded["input_ids"][index], encoded.word_ids(index), strict=True):
            if word is not None:
                pieces[word].append(token_id)
        for word, word_pieces in enumerate(pieces):
            if not word_pieces:  # a word the tokenizer maps to nothing (e.g. a control character)
                pieces[word] = [tokenizer.unk_token_id]
        start = 0
        while start < len(pieces):
            ids: list[int] = []
            positions: list[int] = []
            words: list[int] = []
            end = start
            while end < len(pieces) and (not words or len(ids) + len(pieces[end]) <= budget):
                positions.append(len(ids) + 1)  # +1 for [CLS]
                words.append(end)
                ids.extend(pieces[end][: max(1, budget - len(ids))])
                end += 1
            input_ids = [cls_id, *ids, sep_id]
            targets = [IGNORE] * len(input_ids)
            for position, word in zip(positions, words, strict=True):
                targets[position] = label_ids[example["tags"][word]]
            features.append(Feature(input_ids, None, targets, index, words))
            start = end
    return features


def encode_sequences(
    examples: Sequence[dict],
    tokenizer: PreTrainedTokenizerBase,
    labels: LabelSpace,
    max_length: int,
    text_key: str = "text",
    pair_key: str | None = "text_pair",
) -> list[Feature]:
    """Single texts or pairs, truncated to ``max_length`` (the longest member first)."""
    texts = [ex[text_key] for ex in examples]
    pairs = [ex[pair_key] for ex in examples] if pair_key else None
    has_pairs = bool(pairs) and any(pairs)
    encoded = tokenizer(
        texts,
        pairs if has_pairs else None,
        truncation="longest_first" if has_pairs else True,
        max_length=max_length,
        return_token_type_ids=True,
    )
    label_ids = labels.index()
    features = []
    for index, example in enumerate(examples):
        features.append(
            Feature(
                encoded["input_ids"][index],
                encoded["token_type_ids"][index] if has_pairs else None,
                sequence_target(example, labels, label_ids),
                index,
            )
        )
    return features


def sequence_target(example: dict, labels: LabelSpace, label_ids: dict[str, int]) -> int | float | list[float]:
    """A sequence example's training target: a class id, a 0/1 vector over labels (multi-label) or a score."""
    if labels.kind == "regression":
        return float(example["score"])
    if labels.kind == "multi":
        vector = [0.0] * len(labels.names)
        for name in example["labels"]:
            vector[label_ids[name]] = 1.0
        return vector
    name = example["labels"][0] if "labels" in example else example["label"]
    return label_ids[name]


def decode_token_tagging(
    features: Sequence[Feature], logits: Sequence[np.ndarray], examples: Sequence[dict], labels: LabelSpace
) -> list[list[str]]:
    """Per-word predicted tags for every example, reassembled from its windows."""
    predictions = [[labels.names[0]] * len(ex["tokens"]) for ex in examples]
    for feature, feature_logits in zip(features, logits, strict=True):
        positions = [i for i, t in enumerate(feature.labels) if t != IGNORE]
        best = feature_logits[positions].argmax(axis=-1)
        for word, label in zip(feature.words, best, strict=True):
            predictions[feature.example][word] = labels.names[int(label)]
    return predictions


def decode_sequences(logits: np.ndarray, labels: LabelSpace) -> list:
    """Label names (single), label-name lists (multi: logit > 0, as BLURB's HoC) or floats (regression)."""
    if labels.kind == "regression":
        return [float(v) for v in logits.reshape(-1)]
    if labels.kind == "multi":
        return [[labels.names[j] for j in np.flatnonzero(row > 0)] for row in logits]
    return [labels.names[int(i)] for i in logits.argmax(axis=-1)]
