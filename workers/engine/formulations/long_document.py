"""Long documents for sequence-level tasks: 512-token snippets pooled, or the whole note in one long model.

Clinical notes (MIMIC-AKI, OpenI reports, HoC abstracts, discharge summaries) often exceed the
512 tokens of BERT-style encoders. Li et al. 2022 (Clinical-Longformer and Clinical-BigBird, section
3.5) compare two ways past the limit, and ``--long-documents`` selects them (``truncate``, the
first 512 tokens, stays :class:`~workers.engine.formulations.sequence.SequenceClassification`):

``snippets`` (for short-context models such as BERT)
    Each document is cut into consecutive snippets of at most ``--snippet-length`` tokens (512,
    special tokens included), at most ``--max-snippets`` of them (8: Li et al. 2022 first truncate
    every document to 4,096 tokens, then segments it into 512-token snippets). The encoder
    reads every snippet on its own; the snippets' [CLS] hidden states are pooled across the
    document (``--snippet-pooling`` max or mean, padding snippets masked out: Li et al.'s
    "pooling layer ... to aggregate the output from short snippets"), then dropout 0.1 and a
    linear classifier. **The tail is dropped**: tokens after the first ``max_snippets``
    snippets' worth of the split text are never read; :meth:`LongDocumentClassification.describe`
    records how many documents lost a tail and how many tokens.

    Pairs: the longer member of a pair (in tokens: PubMedQA's and BioASQ's passage, LitCovid's
    abstract) is the one split into snippets, and the shorter one (the question, the title) is
    repeated in every snippet as its own segment, in the pair's original order:
    ``[CLS] text-chunk [SEP] text_pair [SEP]`` or ``[CLS] text [SEP] text_pair-chunk [SEP]``.
    So every snippet sees what the document is being asked about, as truncation's
    ``longest_first`` keeps both members. The repeated member gets at most half of a snippet's
    text budget (its own tail is cut beyond that, and counted).

``full`` (for long-input models)
    The whole document, up to the model's maximum sequence length (the architecture's
    ``max_sequence_length``, 4,096 for the Longformer and BigBird presets, capped by the
    config's position embeddings; for a checkpoint, ``max_position_embeddings`` minus
    RoBERTa-style models' padding offset), in one pass through the family's
    ``...ForSequenceClassification`` head, the setup the paper's long models are fine-tuned
    with. Pairs are cut ``longest_first`` like truncation. Longformer gets global attention on
    [CLS] (``global_attention_mask`` built by the collate function). A 512-token model is
    refused: use ``snippets`` for it.

BigBird (in either mode) silently switches itself from block-sparse to full attention on a batch
of at most ``(5 + 2 * num_random_blocks) * block_size`` tokens, and stays switched for every
later batch (``workers/engine/architectures.py``; METRICS.md). We put it back after every
forward pass (:class:`BigBirdGuard` calls :func:`restore_bigbird_attention`, so training and
prediction are both covered) rather than pad short batches up to the threshold: a short batch
then gets exactly what transformers itself gives a short input (full attention, over at most
704 tokens for the published configuration, so cheap), long batches always get block-sparse
attention whatever came before them, and short notes do not pay for hundreds of padding tokens.
The guard also runs block-sparse batches with autocast off: transformers 5's block-sparse
attention fails under the bf16 autocast that ``--precision auto`` picks on CPUs with bf16.

``--max-length`` does not apply here: snippets are ``--snippet-length`` long, and ``full`` reads
as far as the model does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PretrainedConfig
from transformers.modeling_outputs import SequenceClassifierOutput

from workers.engine.architectures import (
    bigbird_uses_block_sparse,
    cls_global_attention_mask,
    model_max_tokens,
    restore_bigbird_attention,
)
from workers.engine.batching import collate, sequence_labels
from workers.engine.encoding import Feature, sequence_target
from workers.engine.formulations.base import Formulation, ModelSource, declare_long_document_variant
from workers.engine.formulations.sequence import SequenceClassification
from workers.engine.special_tokens import SpecialTemplate

logger = logging.getLogger("biolm.engine")

SHORT_MODEL_TOKENS = 512  # the BERT-family limit that ``full`` is meant to go beyond
SNIPPET_DROPOUT = 0.1  # the dropout of Gu et al. 2021, section 6.2, on the pooled vector as on BERT's pooler

# Families whose position ids start after the padding index (RoBERTa's create_position_ids_from_input_ids):
# max_position_embeddings - (pad_token_id + 1) positions are usable (514 -> 512 for RoBERTa, 4098 -> 4096).


# ---------------------------------------------------------------------------
# The model's length


# ---------------------------------------------------------------------------
# Special tokens, whatever the tokenizer's template


def longest_first(first: int, second: int, budget: int) -> tuple[int, int]:
    """How many tokens of each member ``truncation="longest_first"`` keeps within ``budget``.

    The fast (Rust) tokenizers' rule, which the engine's tokenizers follow (the slow Python ones
    differ by a token on ties): the shorter member keeps at most half the budget, rounded down
    (on a tie ``first`` counts as the shorter), and the longer one takes the rest.
    """
    if first + second <= budget:
        return first, second
    if first > second:
        kept = min(second, budget // 2)
        return budget - kept, kept
    kept = min(first, budget // 2)
    return kept, budget - kept


# ---------------------------------------------------------------------------
# Features and batches


@dataclass
class DocumentFeature(Feature):
    """One document as snippets: their ids (special tokens included) end to end in ``input_ids``.

    ``snippet_lengths`` splits ``input_ids`` (and ``token_type_ids``) back into snippets, so
    ``len(feature)`` is the document's real token count, which the training loop's length
    grouping and throughput figures use.
    """

    snippet_lengths: list[int] = field(default_factory=list)


def collate_snippets(
    features: Sequence[DocumentFeature], pad_id: int, max_width: int, multiple: int = 8
) -> dict[str, torch.Tensor]:
    """``(batch, snippets, length)`` ids, attention mask and segment ids, a ``(batch, snippets)`` snippet mask.

    A batch is as deep as its document with most snippets and as wide as its longest snippet
    (rounded up to a multiple of 8, never beyond ``max_width``); padding snippets are all
    padding and masked out of the pooling.
    """
    depth = max(len(f.snippet_lengths) for f in features)
    longest = max(max(f.snippet_lengths) for f in features)
    width = max(longest, min(-(-longest // multiple) * multiple, max_width))
    shape = (len(features), depth, width)
    input_ids = torch.full(shape, pad_id, dtype=torch.long)
    attention = torch.zeros(shape, dtype=torch.long)
    snippet_mask = torch.zeros(shape[:2], dtype=torch.long)
    with_types = any(f.token_type_ids is not None for f in features)
    types = torch.zeros(shape, dtype=torch.long) if with_types else None
    for row, feature in enumerate(features):
        start = 0
        for snippet, length in enumerate(feature.snippet_lengths):
            input_ids[row, snippet, :length] = torch.tensor(feature.input_ids[start : start + length])
            attention[row, snippet, :length] = 1
            if types is not None and feature.token_type_ids is not None:
                types[row, snippet, :length] = torch.tensor(feature.token_type_ids[start : start + length])
            start += length
        snippet_mask[row, : len(feature.snippet_lengths)] = 1
    batch = {"input_ids": input_ids, "attention_mask": attention, "snippet_mask": snippet_mask}
    if types is not None:
        batch["token_type_ids"] = types
    batch["labels"] = sequence_labels(features)
    return batch


# ---------------------------------------------------------------------------
# The snippet model


class SnippetPoolingClassifier(torch.nn.Module):
    """Encoder on every real snippet, [CLS] states pooled per document, dropout 0.1, linear head.

    ``forward`` takes :func:`collate_snippets`' batch. Padding snippets are dropped before the
    encoder runs (the flattened batch holds real snippets only), so a document's logits do not
    depend on the other documents in its batch. Losses follow ``kind`` as the Hugging Face heads
    do: cross-entropy (single label), binary cross-entropy with one sigmoid per label (multi),
    mean squared error on one output (regression).
    """

    def __init__(self, encoder: torch.nn.Module, num_labels: int, kind: str, pooling: str) -> None:
        super().__init__()
        if pooling not in ("max", "mean"):
            raise ValueError(f"snippet pooling must be max or mean, not {pooling!r}")
        self.encoder = encoder
        self.config = encoder.config
        self.kind = kind
        self.pooling = pooling
        self.global_cls = encoder.config.model_type == "longformer"
        self.dropout = torch.nn.Dropout(SNIPPET_DROPOUT)
        self.classifier = torch.nn.Linear(encoder.config.hidden_size, num_labels)
        std = getattr(encoder.config, "initializer_range", 0.02)
        torch.nn.init.normal_(self.classifier.weight, std=std)
        torch.nn.init.zeros_(self.classifier.bias)

    def snippet_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The encoder's last-layer [CLS] vector of each ``(snippets, length)`` row."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        if self.global_cls:  # Longformer: [CLS] attends to, and is attended by, the whole snippet
            kwargs["global_attention_mask"] = cls_global_attention_mask(input_ids)
        return self.encoder(**kwargs).last_hidden_state[:, 0]

    def pool(self, states: torch.Tensor, snippet_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, snippets, hidden)`` -> ``(batch, hidden)``, ignoring masked snippets."""
        mask = snippet_mask.bool().unsqueeze(-1)
        if self.pooling == "max":
            return states.masked_fill(~mask, torch.finfo(states.dtype).min).amax(dim=1)
        return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1).to(states.dtype)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        snippet_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> SequenceClassifierOutput:
        batch, depth, width = input_ids.shape
        real = snippet_mask.reshape(-1).bool()
        flat_types = token_type_ids.reshape(-1, width)[real] if token_type_ids is not None else None
        cls = self.snippet_states(
            input_ids.reshape(-1, width)[real], attention_mask.reshape(-1, width)[real], flat_types
        )
        states = cls.new_zeros((batch * depth, cls.shape[-1]))
        states[real] = cls
        pooled = self.pool(states.view(batch, depth, -1), snippet_mask)
        logits = self.classifier(self.dropout(pooled))
        loss = self.loss(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        if self.kind == "regression":
            return torch.nn.functional.mse_loss(logits.squeeze(-1), labels.float())
        if self.kind == "multi":
            return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.float())
        return torch.nn.functional.cross_entropy(logits, labels)


class BigBirdGuard(torch.nn.Module):
    """A BigBird model (or bare encoder) that stays block-sparse and runs its block-sparse batches in fp32.

    Two transformers 5 behaviours make a plain BigBird unusable for long documents here:

    * a batch of at most :func:`~workers.engine.architectures.bigbird_block_sparse_threshold`
      tokens switches the model to full attention for good; the guard restores the configured
      attention after every forward pass (in ``finally``, so in training, where ``backward``
      reuses the graph already built, and in prediction alike);
    * block-sparse attention fails under bf16 autocast (its attention-probability scatter mixes
      fp32 softmax weights into a bf16 buffer: ``scatter(): Expected self.dtype to be equal to
      src.dtype``), and ``--precision auto`` picks bf16 on CPUs that have it; block-sparse batches
      therefore run with autocast off (fp32), short full-attention batches keep bf16.

    ``config`` and ``base_model`` are the wrapped model's, so callers inspect it as usual.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    @property
    def config(self) -> PretrainedConfig:
        return self.model.config

    @property
    def base_model(self) -> torch.nn.Module:
        return self.model.base_model

    def forward(self, **inputs: torch.Tensor) -> object:
        input_ids = inputs["input_ids"]
        sparse = bigbird_uses_block_sparse(self.config, input_ids.shape[-1])
        precision = torch.autocast(input_ids.device.type, enabled=False) if sparse else contextlib.nullcontext()
        try:
            with precision:
                return self.model(**inputs)
        finally:
            restore_bigbird_attention(self.model)


def keep_bigbird_block_sparse(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` in a :class:`BigBirdGuard` when it is a BigBird, unchanged otherwise."""
    return BigBirdGuard(model) if getattr(model.config, "model_type", None) == "big_bird" else model


# ---------------------------------------------------------------------------
# The formulation


class LongDocumentClassification(SequenceClassification):
    """``--long-documents snippets|full`` for classification (single, pair, multi-label) and regression."""

    name = "long-document"
    schemas = ("classification", "regression")

    @classmethod
    def long_document_variant(cls) -> type[Formulation] | None:
        return cls

    def setup(self) -> None:
        self.mode = self.options.long_documents
        if self.mode not in ("snippets", "full"):
            raise ValueError(
                f"{type(self).__name__} handles --long-documents snippets or full, not {self.mode!r} "
                "(truncation is SequenceClassification)"
            )
        if self.schema not in self.schemas:
            raise ValueError(
                f"--long-documents {self.mode} applies to classification and regression datasets; "
                f"{self.dataset.slug!r} uses the {self.schema} schema"
            )
        self.template = SpecialTemplate.of(self.tokenizer)
        self.model_type: str | None = None
        self.model_limit: int | None = None
        if self.source is not None:
            self.model_type = self.source.config().model_type
            self.model_limit = model_max_tokens(self.source)
        if self.mode == "snippets":
            if self.options.snippet_length < self.template.specials(pair=True) + 2:
                raise ValueError(
                    f"--snippet-length {self.options.snippet_length} leaves no room for text after the "
                    f"{self.template.specials(pair=True)} special tokens of a pair"
                )
            if self.model_limit is not None and self.options.snippet_length > self.model_limit:
                raise ValueError(
                    f"--snippet-length {self.options.snippet_length} is longer than {_name(self.source)} takes "
                    f"({self.model_limit} tokens); give --snippet-length {self.model_limit} or less"
                )
        else:
            if self.source is None:
                raise ValueError("--long-documents full needs the model (source=) to know how long a document may be")
            if self.model_limit <= SHORT_MODEL_TOKENS:
                raise ValueError(
                    f"--long-documents full needs a model that reads more than {SHORT_MODEL_TOKENS} tokens, but "
                    f"{_name(self.source)} reads {self.model_limit}: use --long-documents snippets with it "
                    "(512-token snippets pooled, Li et al. 2022, section 3.5), or a long-input architecture such as "
                    "longformer or big-bird"
                )
        self.stats = {"documents": 0, "documents_cut": 0, "tokens_dropped": 0, "pair_members_cut": 0}

    # -- lengths ------------------------------------------------------------

    @property
    def document_length(self) -> int:
        """``full``: tokens per document at most, special tokens included (the model's maximum)."""
        if self.model_limit is None:
            raise ValueError("the document length of --long-documents full is the model's; no model was given")
        return self.model_limit

    def describe(self) -> dict:
        description = {"name": f"{self.name}-{self.mode}", "long_documents": self.mode, **self.stats}
        if self.mode == "snippets":
            description |= {
                "snippet_length": self.options.snippet_length,
                "max_snippets": self.options.max_snippets,
                "snippet_pooling": self.options.snippet_pooling,
                "dropped": (
                    "the tail of the split text beyond max_snippets snippets (documents_cut documents, "
                    "tokens_dropped tokens, over every split encoded)"
                ),
                "pairs": "the longer member is split into snippets, the shorter repeated in every snippet",
            }
        else:
            description |= {
                "document_length": self.document_length,
                "dropped": "the tail beyond document_length tokens (pairs: longest_first)",
                "global_attention": "cls" if self.model_type == "longformer" else None,
                "bigbird_attention": (
                    "block_sparse restored after every forward; block-sparse batches in fp32"
                    if self.model_type == "big_bird"
                    else None
                ),
            }
        return description

    # -- encoding -----------------------------------------------------------

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        texts = [row["text"] for row in rows]
        pairs = [row.get("text_pair") or "" for row in rows]
        has_pairs = any(pairs)
        first_ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"] if rows else []
        second_ids = self.tokenizer(pairs, add_special_tokens=False)["input_ids"] if has_pairs else [[]] * len(rows)
        label_ids = self.labels.index()
        build = self._snippets if self.mode == "snippets" else self._full
        features = []
        before = dict(self.stats)
        for index, row in enumerate(rows):
            ids, types, lengths = build(first_ids[index], second_ids[index] if pairs[index] else None)
            target = sequence_target(row, self.labels, label_ids)
            token_types = types if has_pairs else None
            if self.mode == "snippets":
                features.append(DocumentFeature(ids, token_types, target, index, snippet_lengths=lengths))
            else:
                features.append(Feature(ids, token_types, target, index))
            self.stats["documents"] += 1
        cut = self.stats["documents_cut"] - before["documents_cut"]
        if cut:
            logger.info(
                "--long-documents %s: %d of %d documents cut, %d tokens dropped",
                self.mode,
                cut,
                len(rows),
                self.stats["tokens_dropped"] - before["tokens_dropped"],
            )
        return features

    def _snippets(self, first: list[int], second: list[int] | None) -> tuple[list[int], list[int], list[int]]:
        """Consecutive snippets of the longer member, the shorter one repeated in each."""
        if second is None:
            split, partner = first, None
            budget = self.options.snippet_length - self.template.specials(pair=False)
        else:
            split_first = len(first) >= len(second)
            split, partner = (first, second) if split_first else (second, first)
            budget = self.options.snippet_length - self.template.specials(pair=True)
            kept = budget // 2
            if len(partner) > kept:
                partner = partner[:kept]
                self.stats["pair_members_cut"] += 1
            budget -= len(partner)
        limit = budget * self.options.max_snippets
        if len(split) > limit:
            self.stats["documents_cut"] += 1
            self.stats["tokens_dropped"] += len(split) - limit
            split = split[:limit]
        ids: list[int] = []
        types: list[int] = []
        lengths: list[int] = []
        for start in range(0, max(len(split), 1), budget):
            chunk = split[start : start + budget]
            if partner is None:
                snippet_ids, snippet_types = self.template.build(chunk)
            elif split_first:
                snippet_ids, snippet_types = self.template.build(chunk, partner)
            else:
                snippet_ids, snippet_types = self.template.build(partner, chunk)
            ids.extend(snippet_ids)
            types.extend(snippet_types)
            lengths.append(len(snippet_ids))
        return ids, types, lengths

    def _full(self, first: list[int], second: list[int] | None) -> tuple[list[int], list[int], list[int]]:
        """The document up to the model's length; a pair is cut longest_first, as truncation does."""
        budget = self.document_length - self.template.specials(pair=second is not None)
        if second is None:
            keep_first, keep_second = min(len(first), budget), 0
        else:
            keep_first, keep_second = longest_first(len(first), len(second), budget)
        dropped = len(first) - keep_first + (len(second) - keep_second if second is not None else 0)
        if dropped:
            self.stats["documents_cut"] += 1
            self.stats["tokens_dropped"] += dropped
        ids, types = self.template.build(first[:keep_first], second[:keep_second] if second is not None else None)
        return ids, types, [len(ids)]

    # -- model --------------------------------------------------------------

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        limit = model_max_tokens(source)
        if self.mode == "snippets":
            if self.options.snippet_length > limit:
                raise ValueError(
                    f"--snippet-length {self.options.snippet_length} is longer than {_name(source)} takes ({limit})"
                )
            encoder = keep_bigbird_block_sparse(source.encoder())
            return SnippetPoolingClassifier(encoder, self.labels.size, self.labels.kind, self.options.snippet_pooling)
        if limit < self.document_length:
            raise ValueError(
                f"documents were encoded to {self.document_length} tokens but {_name(source)} takes {limit}"
            )
        return keep_bigbird_block_sparse(self.cls_classifier(source))

    def computed_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        """Padding snippets never reach the encoder (the model runs the real ones only)."""
        if "snippet_mask" in batch:
            return int(batch["snippet_mask"].sum()) * batch["input_ids"].shape[-1]
        return super().computed_tokens(batch)

    def collate(self, features: Sequence[Feature], pad_id: int) -> dict[str, torch.Tensor]:
        if self.mode == "snippets":
            return collate_snippets(features, pad_id, self.options.snippet_length)
        longest = max(len(f) for f in features)
        batch = collate(features, pad_id, multiple=8 if -(-longest // 8) * 8 <= self.document_length else 1)
        if self.model_type == "longformer":
            batch["global_attention_mask"] = cls_global_attention_mask(batch["input_ids"])
        return batch


def _name(source: ModelSource) -> str:
    return source.architecture or str(source.model_dir)


declare_long_document_variant(SequenceClassification, LongDocumentClassification)
