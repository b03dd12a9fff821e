"""Relation extraction: how the two entities are shown to the encoder and which vectors classify them.

Every ``relation`` example is a text with two typed character spans (``head``, ``tail``) and a
label. Two choices shape the formulation, and the ablation of Gu et al. 2021 (section 6.5, Table 12: ChemProt
77.24 / DDI 82.36 with dummification and [CLS], 77.72 / 82.22 with entity markers and [CLS],
77.58 / 82.18 with markers and the entity-start tokens) shows they move scores by tenths of a
point, while the original text without either falls to 50.52 / 37.00:

``relation_representation``
    ``dummify`` (BLURB's default, Gu et al. 2021, section 5): each entity is replaced by ``@TYPE$``, so the
    model cannot memorise entity pairs. BLURB's ChemProt, DDI and GAD files come dummified already
    (the readers' spans cover ``@CHEMICAL$`` ...); that text is used unchanged, so BLURB runs are
    the [CLS] classifier BLURB describes. Clinical corpora (i2b2 2010, n2c2 2018) give the
    original words, which are dummified here with their upper-cased types (``@PROBLEM$``,
    ``@ADE$``); two overlapping entities become one ``@HEAD-TAIL$``, as BLURB writes ``@CHEM-GENE$``.

    ``markers``: the entity words stay and four marker tokens surround them, ``[E1] ... [/E1]``
    around the head and ``[E2] ... [/E2]`` around the tail. They are untyped and name the
    argument's role, as both papers do: Yang et al. 2022 (Methods, MRE) use ``[S1]/[E1]`` and ``[S2]/[E2]``,
    Gu et al. 2021 start/end tags in their ablation. Untyped markers are a fixed set of four new tokens whatever
    the dataset (typed ones would add tokens per entity type, some unseen in training), the role
    keeps the direction of asymmetric relations (i2b2's TrAP is treatment -> problem), and the type
    stays visible in the words or, for BLURB text, in the dummy the markers surround.

``relation_features``
    ``cls``: the architecture's own sequence classifier on [CLS] (BERT's pooler, RoBERTa's head), so
    ``dummify`` + ``cls`` is exactly the [CLS] formulation used for BLURB.
    ``cls+markers`` (Yang et al. 2022, Methods): the last hidden states of [CLS], ``[E1]`` and ``[E2]`` are
    concatenated, then dropout 0.1 and one linear layer with cross-entropy. Yang et al. 2022
    also concatenate the two end markers; we follow the "entity start" encoding of Gu et al. 2021 (and Baldini
    Soares et al. 2019, its reference [7]) and keep the two start markers only.

Markers are spliced in at the token level: the text is tokenized once with character offsets and
the marker ids are inserted before the first token of an entity and after its last token. The
text's own tokens are thus exactly those of the unmarked text, with any tokenizer (a byte-level
BPE would otherwise turn the spaces around a textual marker into tokens of their own).

Inputs longer than ``max_length`` are cut from the end, as BLURB cuts them, only when both entities
stay in; otherwise they are cut to a window around the two entities: a sentence whose entity lies
past the limit would lose its marker (or its dummy), and the example its meaning. See :func:`window`.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedTokenizerBase
from transformers.modeling_outputs import SequenceClassifierOutput

from biolm.schemas.relation import PLACEHOLDER  # BLURB's @CHEMICAL$-style dummies
from workers.engine.batching import collate
from workers.engine.encoding import Feature
from workers.engine.formulations.base import Formulation, ModelSource
from workers.engine.formulations.sequence import SequenceClassification

logger = logging.getLogger("biolm.engine")

HEAD_START, HEAD_END, TAIL_START, TAIL_END = MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")


@dataclass(frozen=True)
class Span:
    """One argument of a relation: characters ``start:end`` of the text (end exclusive) and a type."""

    start: int
    end: int
    type: str

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass
class RelationFeature(Feature):
    """A :class:`Feature` that also knows where ``[E1]`` and ``[E2]`` are in ``input_ids`` (markers only)."""

    markers: tuple[int, int] | None = None


def entity_spans(row: dict) -> tuple[Span, Span]:
    """The head and tail of ``row``, checked: a bad span would silently mark or dummify the wrong words."""
    text = row.get("text")
    if not isinstance(text, str) or not text:
        raise ValueError(f"relation example {row.get('id')!r} has no text")
    spans = []
    for role in ("head", "tail"):
        span = row.get(role)
        if not isinstance(span, dict) or not {"start", "end", "type"} <= set(span):
            raise ValueError(f"relation example {row.get('id')!r}: {role} must be {{start, end, type}}, not {span!r}")
        start, end, kind = span["start"], span["end"], span["type"]
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            raise ValueError(
                f"relation example {row.get('id')!r}: {role} span {start}:{end} is not a non-empty range "
                f"within the text's {len(text)} characters"
            )
        if not isinstance(kind, str) or not re.search(r"[A-Za-z]", kind):
            raise ValueError(f"relation example {row.get('id')!r}: {role} type {kind!r} has no letters")
        spans.append(Span(start, end, kind))
    return spans[0], spans[1]


def placeholder(*types: str) -> str:
    """``@TYPE$`` (``@HEAD-TAIL$`` for merged mentions): letters upper-cased, other runs become ``-``."""
    names = [re.sub(r"[^A-Z]+", "-", kind.upper()).strip("-") for kind in types]
    return "@" + "-".join(names) + "$"


def is_dummified(text: str, span: Span) -> bool:
    return PLACEHOLDER.fullmatch(text[span.start : span.end]) is not None


def dummify(text: str, head: Span, tail: Span) -> tuple[str, Span, Span]:
    """``text`` with each entity replaced by ``@TYPE$``, and the spans of the two dummies in it.

    Text whose two spans are placeholders already (BLURB's files) is returned unchanged. Overlapping
    entities are replaced together, over their union, by ``@HEAD-TAIL$``; head and tail are then
    that one dummy, as the BLURB readers give ``@CHEM-GENE$``.
    """
    if is_dummified(text, head) and is_dummified(text, tail):
        return text, head, tail
    if head.overlaps(tail):
        start, end = min(head.start, tail.start), max(head.end, tail.end)
        dummy = placeholder(head.type, tail.type)
        merged = text[:start] + dummy + text[end:]
        return merged, Span(start, start + len(dummy), head.type), Span(start, start + len(dummy), tail.type)
    replaced: dict[str, Span] = {}
    pieces, cursor, shift = [], 0, 0
    for role, span in sorted((("head", head), ("tail", tail)), key=lambda item: item[1].start):
        dummy = text[span.start : span.end] if is_dummified(text, span) else placeholder(span.type)
        pieces += [text[cursor : span.start], dummy]
        replaced[role] = Span(span.start + shift, span.start + shift + len(dummy), span.type)
        shift += len(dummy) - (span.end - span.start)
        cursor = span.end
    pieces.append(text[cursor:])
    return "".join(pieces), replaced["head"], replaced["tail"]


def marker_insertions(head: Span, tail: Span) -> list[tuple[int, str]]:
    """``(character position, marker)`` for the four markers, in the order they are written.

    At one position closing markers come before opening ones (adjacent entities read
    ``A[/E1][E2]B``); of two entities opening together the longer one opens first and of two
    closing together the later-opened one closes first, so nested entities nest properly; when
    the two spans are the same (BLURB's ``@CHEM-GENE$``) the head is outside: ``[E1][E2]x[/E2][/E1]``.
    """
    events = []
    for rank, (span, opening, closing) in enumerate(((head, HEAD_START, HEAD_END), (tail, TAIL_START, TAIL_END))):
        events.append(((span.start, 1, -span.end, rank), span.start, opening))
        events.append(((span.end, 0, -span.start, -rank), span.end, closing))
    return [(position, marker) for _, position, marker in sorted(events)]


def mark(text: str, head: Span, tail: Span) -> str:
    """``text`` with the markers written in (what the token-level splice shows the model, as characters)."""
    pieces, cursor = [], 0
    for position, marker in marker_insertions(head, tail):
        pieces += [text[cursor:position], marker]
        cursor = position
    pieces.append(text[cursor:])
    return "".join(pieces)


def splice_markers(
    ids: Sequence[int], offsets: Sequence[tuple[int, int]], head: Span, tail: Span, marker_ids: dict[str, int]
) -> tuple[list[int], dict[str, int]]:
    """Token ids with the four marker ids inserted, and each marker's index in them.

    A start marker goes before the first token that ends after the entity's start, an end marker
    after the last token that starts before its end; an entity boundary inside a token thus marks
    the whole token. ``offsets`` are the tokens' character offsets in the text, in order.
    """
    starts = [start for start, _ in offsets]
    ends = [end for _, end in offsets]
    gaps: list[list[str]] = [[] for _ in range(len(ids) + 1)]  # gaps[g]: markers just before token g
    for position, marker in marker_insertions(head, tail):
        opening = marker in (HEAD_START, TAIL_START)
        gaps[bisect_right(ends, position) if opening else bisect_left(starts, position)].append(marker)
    spliced: list[int] = []
    where: dict[str, int] = {}
    for gap, markers in enumerate(gaps):
        for marker in markers:
            where[marker] = len(spliced)
            spliced.append(marker_ids[marker])
        if gap < len(ids):
            spliced.append(ids[gap])
    return spliced, where


def window(length: int, regions: Sequence[tuple[int, int]], budget: int) -> list[int]:
    """Indices of the tokens kept when ``length`` tokens must fit in ``budget``, in order.

    ``regions`` are the entities' first and last token indices (their markers, or their dummies'
    tokens). When both entities lie within the first ``budget`` tokens the input is cut from the
    end, exactly as the tokenizer's own truncation (and BLURB) would cut it. Otherwise the entities'
    end tokens are always kept: if the stretch from the first entity to the last fits in the budget,
    the window is that stretch plus context on both sides, alternately left and right, shifted when
    one side runs out of text (one contiguous piece); if the entities are farther apart than the
    budget, each keeps its own tokens and the context around it and the words between them are
    dropped, rather than losing an entity.
    """
    if length <= budget:
        return list(range(length))
    ends = {index for region in regions for index in region}
    if len(ends) > budget:
        raise ValueError(f"a {budget}-token budget cannot hold the {len(ends)} entity boundary tokens")
    low, high = min(first for first, _ in regions), max(last for _, last in regions)
    if high < budget:
        return list(range(budget))
    core = [(low, high)] if high - low + 1 <= budget else list(regions)

    def distance(index: int) -> int:
        return min(max(first - index, index - last, 0) for first, last in core)

    ranked = sorted(range(length), key=lambda index: (index not in ends, distance(index), index))
    return sorted(ranked[:budget])


def add_marker_tokens(tokenizer: PreTrainedTokenizerBase) -> dict[str, int]:
    """Add the four markers to ``tokenizer`` as special tokens (once), and return their ids.

    Only markers the tokenizer lacks are added, in the fixed order of :data:`MARKERS`, so a
    tokenizer shared by every run of a grid grows once and its ids are the same in every run.
    """
    present = tokenizer.get_added_vocab()
    missing = [marker for marker in MARKERS if marker not in present]
    if missing:
        tokenizer.add_tokens(missing, special_tokens=True)
    ids = dict(zip(MARKERS, tokenizer.convert_tokens_to_ids(list(MARKERS)), strict=True))
    if tokenizer.unk_token_id is not None and tokenizer.unk_token_id in ids.values():
        raise ValueError(f"the tokenizer did not accept the entity markers {', '.join(MARKERS)}")
    return ids


class MarkerRelationClassifier(torch.nn.Module):
    """[CLS] + ``[E1]`` + ``[E2]`` hidden states -> dropout 0.1 -> linear -> cross-entropy (Yang et al. 2022, MRE).

    The encoder is the bare one (:meth:`ModelSource.encoder`, no pooler): the three vectors are
    the top layer's, as Yang et al. 2022 and the "entity start" encoding of Gu et al. 2021 use them.
    """

    def __init__(self, encoder: torch.nn.Module, num_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = encoder.config
        self.dropout = torch.nn.Dropout(dropout)
        self.classifier = torch.nn.Linear(3 * encoder.config.hidden_size, num_labels)
        # As Hugging Face initialises its classification heads.
        torch.nn.init.normal_(self.classifier.weight, std=getattr(encoder.config, "initializer_range", 0.02))
        torch.nn.init.zeros_(self.classifier.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        marker_positions: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> SequenceClassifierOutput:
        if marker_positions is None:
            raise ValueError("the cls+markers classifier needs marker_positions (batch, 2): where [E1] and [E2] are")
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        if self.config.model_type == "longformer":
            # Local attention alone would not let [CLS] see both entities in a long input.
            rows = torch.arange(input_ids.shape[0], device=input_ids.device)
            global_mask = torch.zeros_like(input_ids)
            global_mask[:, 0] = 1
            global_mask[rows, marker_positions[:, 0]] = 1
            global_mask[rows, marker_positions[:, 1]] = 1
            inputs["global_attention_mask"] = global_mask
        hidden = self.encoder(**inputs).last_hidden_state
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        features = torch.cat(
            [hidden[:, 0], hidden[rows, marker_positions[:, 0]], hidden[rows, marker_positions[:, 1]]], dim=-1
        )
        logits = self.classifier(self.dropout(features))
        loss = torch.nn.functional.cross_entropy(logits.float(), labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


class RelationClassification(SequenceClassification):
    """Single-label relation classification of (text, head, tail) examples; see the module docstring."""

    name = "relation-classification"
    schemas = ("relation",)

    @classmethod
    def long_document_variant(cls) -> type[Formulation] | None:
        return None  # a relation's entities are windowed instead (see window())

    def setup(self) -> None:
        if self.labels.kind != "single":
            raise ValueError(
                f"relation extraction predicts one label per pair; {self.dataset.slug!r} is {self.labels.kind}"
            )
        self.markers = self.options.relation_representation == "markers"
        self.marker_ids = add_marker_tokens(self.tokenizer) if self.markers else {}

    def describe(self) -> dict:
        described = {
            "name": self.name,
            "relation_representation": self.options.relation_representation,
            "relation_features": self.options.relation_features,
        }
        if self.markers:
            described["markers"] = list(MARKERS)
        return described

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        if not rows:
            return []
        spans = [entity_spans(row) for row in rows]
        if self.markers:
            texts = [row["text"] for row in rows]
        else:
            dummified = [dummify(row["text"], *pair) for row, pair in zip(rows, spans, strict=True)]
            texts = [text for text, _, _ in dummified]
            spans = [(head, tail) for _, head, tail in dummified]
        logger.debug("relation input: %s", mark(texts[0], *spans[0]) if self.markers else texts[0])
        encoded = self.tokenizer(texts, return_offsets_mapping=True)
        label_ids = self.labels.index()
        features = []
        for index, (row, (head, tail)) in enumerate(zip(rows, spans, strict=True)):
            ids, offsets = encoded["input_ids"][index], encoded["offset_mapping"][index]
            content = [j for j, sequence in enumerate(encoded.sequence_ids(index)) if sequence == 0]
            # The tokenizer's own special tokens around the text ([CLS] ... [SEP], <s> ... </s>).
            first, last = (content[0], content[-1]) if content else (1, 0)
            prefix, suffix = ids[:first], ids[last + 1 :]
            text_ids, text_offsets = ids[first : last + 1], offsets[first : last + 1]
            positions: tuple[int, int] | None = None
            if self.markers:
                text_ids, where = splice_markers(text_ids, text_offsets, head, tail, self.marker_ids)
                regions = [(where[HEAD_START], where[HEAD_END]), (where[TAIL_START], where[TAIL_END])]
            else:
                regions = [self._token_range(text_offsets, span, row) for span in (head, tail)]
            budget = self.max_length - len(prefix) - len(suffix)
            try:
                kept = window(len(text_ids), regions, budget)
            except ValueError as exc:
                context = f"relation example {row.get('id')!r} at --max-length {self.max_length}"
                raise ValueError(f"{context}: {exc}") from exc
            input_ids = [*prefix, *(text_ids[k] for k in kept), *suffix]
            if self.markers:
                index_of = {k: i for i, k in enumerate(kept)}
                positions = (len(prefix) + index_of[where[HEAD_START]], len(prefix) + index_of[where[TAIL_START]])
            if row["label"] not in label_ids:
                raise ValueError(f"relation example {row.get('id')!r} has the unknown label {row['label']!r}")
            features.append(RelationFeature(input_ids, None, label_ids[row["label"]], index, markers=positions))
        return features

    @staticmethod
    def _token_range(offsets: Sequence[tuple[int, int]], span: Span, row: dict) -> tuple[int, int]:
        """First and last token overlapping ``span`` (a dummy): what the window must keep."""
        inside = [j for j, (start, end) in enumerate(offsets) if start < span.end and end > span.start]
        if not inside:
            raise ValueError(f"relation example {row.get('id')!r}: the tokenizer gives no token for its {span.type}")
        return inside[0], inside[-1]

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        if source.model_dir is None and source.vocab_size != len(self.tokenizer):
            # Built from scratch: size the embeddings for the markers from the start.
            source = replace(source, vocab_size=len(self.tokenizer))
        if self.options.relation_features == "cls+markers":
            model: torch.nn.Module = MarkerRelationClassifier(source.encoder(), self.labels.size)
            embeddings = model.encoder
        else:
            model = embeddings = self.cls_classifier(source)
        # A checkpoint's vocabulary lacks the markers added to its tokenizer: grow the embeddings to match.
        if embeddings.get_input_embeddings().num_embeddings < len(self.tokenizer):
            embeddings.resize_token_embeddings(len(self.tokenizer))
        return model

    def collate(self, features: Sequence[Feature], pad_id: int) -> dict[str, torch.Tensor]:
        batch = collate(features, pad_id)
        if self.options.relation_features == "cls+markers":
            batch["marker_positions"] = torch.tensor([f.markers for f in features], dtype=torch.long)
        return batch
