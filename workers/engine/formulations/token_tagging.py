"""Token classification (NER, de-identification, PICO): a linear head on every first sub-token.

Gu et al. 2021, section 5: each word's first sub-token carries the word's tag and the model predicts
per word; inputs longer than the model are split into windows of whole words
(:func:`workers.engine.encoding.encode_token_tagging`) so no gold word is ever dropped. The
section's modelling choices are options here:

* ``--tagging-scheme bio|bioul|io`` (the ablation of Gu et al. 2021: the difference is minuscule). The
  model trains on the dataset's tags rewritten in the scheme
  (:mod:`workers.engine.tagging_schemes`), and its predictions are rewritten in the dataset's
  own form before scoring, so every scheme is scored by the same conlleval entity reading
  (METRICS.md). The default, BIO without a CRF, trains on the dataset's tags untouched.
* ``--crf``: a linear-chain CRF (:mod:`workers.engine.crf`) over the linear head's per-word
  scores, trained by negative log-likelihood and decoded by Viterbi with the trained
  transitions; transitions the scheme cannot write (``O`` -> ``I-X`` in BIO) are forbidden.
* PICO elements (section 5: "A token may belong to more than one element, e.g., participant
  (P) and intervention (I)"): for task type ``pico`` the default ``--pico-elements multi``
  trains one sigmoid per element and predicts each word's set of elements (logit > 0). A word
  in several elements is written with its tags joined by ``|`` (``I-PAR|I-INT``), in the data
  and in the predictions; ``single`` keeps one softmax tag per word as the BLURB files have.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from transformers import (
    AutoModelForTokenClassification,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.modeling_outputs import TokenClassifierOutput

from biolm.schemas.token_tagging import ELEMENT_SEPARATOR
from workers.engine.crf import LinearChainCRF, pack_labelled
from workers.engine.encoding import IGNORE, Feature, LabelSpace, decode_token_tagging, encode_token_tagging
from workers.engine.formulations.base import Formulation, ModelSource
from workers.engine.prediction_scoring import class_counts, score_predictions
from workers.engine.tagging_schemes import (
    OUTSIDE,
    allowed_transitions,
    convert,
    dataset_scheme,
    entity_types,
    join_tag,
    scheme_labels,
    split_tag,
)

VITERBI_BATCH = 256  # features decoded together: bounds the padded emission tensor


class TokenTagging(Formulation):
    name = "token-tagging"
    schemas = ("token-tagging",)

    def setup(self) -> None:
        options = self.options
        self.multi_element = self.task.task_type.multi_element and options.pico_elements == "multi"
        # BIO without a CRF trains on the dataset's tags as they are (the engine's original path).
        self.passthrough = not self.multi_element and options.tagging_scheme == "bio" and not options.crf
        if self.multi_element:
            if options.crf or options.tagging_scheme != "bio":
                raise ValueError(
                    "--crf and --tagging-scheme need one tag per word, but PICO is tagged with one sigmoid per "
                    "element (--pico-elements multi, the default); add --pico-elements single to use them"
                )
            self.elements = tuple(join_tag("I", t) for t in entity_types(self.labels.names))
            self.tags = LabelSpace(self.elements, "multi")
        elif self.passthrough:
            self.tags = self.labels
        else:
            self.tags = LabelSpace(scheme_labels(entity_types(self.labels.names), options.tagging_scheme))
        self.output_scheme = dataset_scheme(self.labels.names)

    def describe(self) -> dict:
        """The choices that change scores (Gu et al. 2021, section 5), as the results JSON records them."""
        return {
            "name": self.name,
            # one sigmoid per element is IO per element: no boundaries are modelled
            "tagging_scheme": "io" if self.multi_element else self.options.tagging_scheme,
            "crf": self.options.crf,
            "crf_learning_rate": self.options.crf_learning_rate if self.options.crf else None,
            "crf_transitions": "forbidden where the scheme cannot write them" if self.options.crf else None,
            "multi_element": self.multi_element,
            "model_labels": list(self.tags.names),
            "predictions_scheme": "io" if self.multi_element else self.output_scheme,
        }

    # --- inputs -------------------------------------------------------------------------------

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        if self.multi_element:
            return self._encode_elements(rows)
        for row in rows:
            joined = next((tag for tag in row["tags"] if ELEMENT_SEPARATOR in tag), None)
            if joined is not None:
                where = (
                    "add --pico-elements multi"
                    if self.task.task_type.multi_element
                    else f"only multi-element task types (PICO) allow that, not {self.task.task_type.slug!r}"
                )
                raise ValueError(f"example {row.get('id')!r}: the word tag {joined!r} joins several tags; {where}")
        if self.passthrough:
            return encode_token_tagging(rows, self.tokenizer, self.tags, self.max_length)
        scheme = self.options.tagging_scheme
        converted = [{**row, "tags": convert(row["tags"], scheme)} for row in rows]
        return encode_token_tagging(converted, self.tokenizer, self.tags, self.max_length)

    def _encode_elements(self, rows: Sequence[dict]) -> list[Feature]:
        """Each word's target is its element set as a bitmask (bit j = element j), so the shared
        windowing and collate code carry it as one integer per word; the model unpacks it."""
        bit = {element: 1 << j for j, element in enumerate(self.elements)}
        words = sorted({tag for row in rows for tag in row["tags"]})
        masks = []
        for tag in words:
            mask = 0
            for part in self.word_elements(tag):
                mask |= bit[part]
            masks.append(mask)
        features = encode_token_tagging(rows, self.tokenizer, LabelSpace(tuple(words)), self.max_length)
        for feature in features:
            feature.labels = [IGNORE if t == IGNORE else masks[t] for t in feature.labels]
        return features

    def word_elements(self, tag: str) -> frozenset[str]:
        """``I-PAR|I-INT`` -> {I-PAR, I-INT}; ``O`` -> {}; a B- prefix reads as the element (IO)."""
        found = set()
        for part in tag.split(ELEMENT_SEPARATOR):
            prefix, element_type = split_tag(part)
            if prefix == OUTSIDE:
                continue
            element = join_tag("I", element_type)
            if element not in self.elements:
                raise ValueError(f"word tag {tag!r} has the element {part!r}, not one of {list(self.elements)}")
            found.add(element)
        return frozenset(found)

    # --- model --------------------------------------------------------------------------------

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        tagger = source.head_model(
            AutoModelForTokenClassification,
            num_labels=self.tags.size,
            id2label=dict(enumerate(self.tags.names)),
            label2id=self.tags.index(),
        )
        if self.multi_element:
            return MultiElementTagger(tagger)
        if self.options.crf:
            allowed = torch.tensor(allowed_transitions(self.tags.names, self.options.tagging_scheme))
            crf = LinearChainCRF(self.tags.size, allowed)
            crf.own_learning_rate = self.options.crf_learning_rate  # see training.parameter_groups
            return CRFTagger(tagger, crf)
        return tagger

    # --- outputs ------------------------------------------------------------------------------

    def decode(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], model: torch.nn.Module
    ) -> list[list[str]]:
        """One tag per word in the dataset's own form (``I-PAR|I-INT`` for a multi-element word)."""
        if self.multi_element:
            return self._decode_elements(features, logits, rows)
        if self.options.crf:
            if not isinstance(model, CRFTagger):
                raise TypeError(f"--crf decodes with the trained CRF's transitions; got a {type(model).__name__}")
            predicted = self._viterbi(features, logits, rows, model.crf)
        else:
            predicted = decode_token_tagging(features, logits, rows, self.tags)
        if self.passthrough:
            return predicted
        return [convert(tags, self.output_scheme) for tags in predicted]

    def _viterbi(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], crf: LinearChainCRF
    ) -> list[list[str]]:
        predictions = [[OUTSIDE] * len(row["tokens"]) for row in rows]
        device = crf.transitions.device
        for start in range(0, len(features), VITERBI_BATCH):
            chunk = range(start, min(start + VITERBI_BATCH, len(features)))
            scores = [logits[i][[p for p, t in enumerate(features[i].labels) if t != IGNORE]] for i in chunk]
            width = max(len(s) for s in scores)
            emissions = torch.zeros((len(scores), width, self.tags.size), dtype=torch.float32)
            mask = torch.zeros((len(scores), width), dtype=torch.bool)
            for row, s in enumerate(scores):
                emissions[row, : len(s)] = torch.from_numpy(np.asarray(s, dtype=np.float32))
                mask[row, : len(s)] = True
            for i, path in zip(chunk, crf.viterbi(emissions.to(device), mask.to(device)), strict=True):
                for word, label in zip(features[i].words, path, strict=True):
                    predictions[features[i].example][word] = self.tags.names[label]
        return predictions

    def _decode_elements(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict]
    ) -> list[list[str]]:
        predictions = [[OUTSIDE] * len(row["tokens"]) for row in rows]
        for feature, feature_logits in zip(features, logits, strict=True):
            positions = [p for p, t in enumerate(feature.labels) if t != IGNORE]
            for word, on in zip(feature.words, feature_logits[positions] > 0, strict=True):
                chosen = [element for element, flag in zip(self.elements, on, strict=True) if flag]
                predictions[feature.example][word] = ELEMENT_SEPARATOR.join(chosen) or OUTSIDE
        return predictions

    def score(self, rows: Sequence[dict], predicted: Sequence, logits: Sequence[np.ndarray]) -> dict:
        """Multi-element words are scored as element sets (token-macro-f1 takes sets per word)."""
        if not self.multi_element:
            return super().score(rows, predicted, logits)
        gold_sets, sets = self._element_sets(rows, predicted)
        return score_predictions(self.task, self.labels, rows, sets, gold=gold_sets)

    def class_counts(
        self, rows: Sequence[dict], predicted: Sequence, typed_gold: Sequence | None = None
    ) -> dict | None:
        """Per-element counts, multi-element words read as element sets, as :meth:`score` reads them."""
        if not self.multi_element:
            return super().class_counts(rows, predicted, typed_gold)
        gold_sets, sets = self._element_sets(rows, predicted)
        return class_counts(self.task, self.labels, rows, sets, gold=gold_sets)

    def _element_sets(self, rows: Sequence[dict], predicted: Sequence) -> tuple[list, list]:
        """Gold and predicted words as element sets (the multi-element reading)."""
        gold_sets = [[self.word_elements(tag) for tag in row["tags"]] for row in rows]
        return gold_sets, [[self.word_elements(tag) for tag in words] for words in predicted]


class _Wrapped(torch.nn.Module):
    """A token-classification model whose loss (and, for the CRF, decoding) this module replaces."""

    def __init__(self, tagger: PreTrainedModel) -> None:
        super().__init__()
        self.tagger = tagger

    @property
    def config(self) -> PretrainedConfig:
        return self.tagger.config

    def emissions(self, **inputs: torch.Tensor) -> torch.Tensor:
        return self.tagger(**inputs).logits


class CRFTagger(_Wrapped):
    """Linear-head emissions scored by a CRF over each input's labelled (first sub-token) positions."""

    def __init__(self, tagger: PreTrainedModel, crf: LinearChainCRF) -> None:
        super().__init__(tagger)
        self.crf = crf

    def forward(self, labels: torch.Tensor | None = None, **inputs: torch.Tensor) -> TokenClassifierOutput:
        logits = self.emissions(**inputs)
        loss = None
        if labels is not None:
            emissions, tags, mask = pack_labelled(logits, labels, IGNORE)
            # mean over words, like the linear head's cross-entropy, so the BLURB learning rates carry over
            loss = self.crf.nll(emissions, tags, mask).sum() / mask.sum()
        return TokenClassifierOutput(loss=loss, logits=logits)


class MultiElementTagger(_Wrapped):
    """One sigmoid per element and word; targets arrive as per-word bitmasks (bit j = element j)."""

    def forward(self, labels: torch.Tensor | None = None, **inputs: torch.Tensor) -> TokenClassifierOutput:
        logits = self.emissions(**inputs)
        loss = None
        if labels is not None:
            labelled = labels != IGNORE
            bits = torch.arange(logits.shape[-1], device=labels.device)
            targets = ((labels[labelled].unsqueeze(1) >> bits) & 1).float()
            with torch.autocast(device_type=logits.device.type, enabled=False):  # the loss in float32
                loss = F.binary_cross_entropy_with_logits(logits[labelled].float(), targets)
        return TokenClassifierOutput(loss=loss, logits=logits)
