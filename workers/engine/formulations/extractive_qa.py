"""Extractive question answering: the answer is a span of the context, found by start and end scores.

Yang et al. 2022 (GatorTron, Methods, "Fine-Tune GatorTron for Medical Question Answering") packs the question
and the context into one sequence, ``[CLS] question [SEP] context [SEP]``, and puts two linear layers
on the encoder to score each token as the answer's start and its end. Its numbers are ours:

* questions keep at most ``max_question_length`` (64) tokens;
* "the rest of the 446 tokens (including special tokens such as [CLS] and [SEP]) were used for the
  context": we read ``qa_window`` (446) as the window *with* the pair's special tokens, so a window
  holds ``446 - 3 = 443`` context tokens for a BERT vocabulary (``446 - 4`` for RoBERTa's
  ``<s> q </s></s> c </s>``). This is the reading that fits the 512-token models the paper
  fine-tunes: 64 + 446 = 510 tokens. Counting the specials outside the 446 would make a full
  question's sequence 513 tokens, one more than BERT's positions;
* longer contexts are scanned by a sliding window whose consecutive windows start ``qa_stride``
  (396) context tokens apart. The paper's "50 tokens overlapped" is 446 - 396 in window tokens;
  in context tokens two consecutive windows share 443 - 396 = 47;
* answers are at most ``max_answer_length`` (32) tokens.

Training follows the Hugging Face ``run_qa`` example: every window is a training feature; its targets
are the first gold answer's start and end tokens when the answer lies entirely inside the window,
and the [CLS] position (0) for both otherwise. Evaluation never drops a question: every question has
at least one window, and its prediction is the best span over all of its windows, ranked by start
logit + end logit, with ``start <= end``, at most ``max_answer_length`` tokens, inside the context.

emrQA (Li et al. 2022, Yang et al. 2022) is scored by SQuAD v1.1 token F1 and exact match against all gold answers;
BioASQ factoid (Fang et al. 2023, Bioformer) by strict accuracy, lenient accuracy and MRR over the ``n_best``
ranked answers. BioBERT's BioASQ data has one example per (question, snippet) with ids
``<question id>_<nnn>``; as BioBERT's ``transform_n2b_factoid.py`` does, a question's answers are
merged over its snippets by probability (softmax over each snippet's n-best scores, as BERT's
``run_squad``), case-insensitive duplicates removed, and each question is scored once.

Longformer (Clinical-Longformer of Li et al. 2022) gets global attention on [CLS] and the question tokens,
as Beltagy et al. do for QA; the batch always carries the ``global_attention_mask`` and the model
wrapper passes it on only to Longformer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import AutoModelForQuestionAnswering, PreTrainedModel

from workers.engine.batching import collate
from workers.engine.encoding import Feature
from workers.engine.formulations.base import Formulation, ModelSource
from workers.engine.special_tokens import SpecialTemplate

NO_ANSWER = 0  # the [CLS] position, where a window without the (whole) answer points both targets
_SNIPPET_ID = re.compile(r"^(?P<question>.+)_\d+$")  # BioBERT's "<question id>_<nnn>", one per snippet


@dataclass
class QAFeature(Feature):
    """One window of one question: ``labels`` is ``[start, end]`` (both 0 when the answer is not inside).

    ``offsets[i]`` is the character span in the example's context of the window's ``i``-th context
    token, which sits at position ``context_start + i`` of ``input_ids``; ``window_start`` is the index
    of that first token among all the context's tokens. ``global_positions`` are [CLS] and the question.
    """

    context_start: int = 0
    window_start: int = 0
    offsets: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    global_positions: list[int] = field(default_factory=list)


@dataclass
class SpanOutput:
    """What the training loop reads: ``loss`` and ``logits`` of shape ``(batch, length, 2)`` (start, end)."""

    loss: torch.Tensor | None
    logits: torch.Tensor


class SpanExtractionModel(torch.nn.Module):
    """An ``AutoModelForQuestionAnswering`` whose output stacks start and end logits into ``.logits``.

    The engine's ``predict`` keeps one ``.logits`` array per feature; stacking the two heads into the
    last axis lets it trim padding like any per-token output. Targets arrive as ``labels`` of shape
    ``(batch, 2)``. Segment ids reach only models with two segment types (RoBERTa and Longformer
    checkpoints have one), the global attention mask only Longformer.
    """

    def __init__(self, model: PreTrainedModel) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        self.uses_segments = int(getattr(model.config, "type_vocab_size", 2) or 0) > 1
        self.uses_global_attention = model.config.model_type == "longformer"

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        global_attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> SpanOutput:
        inputs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self.uses_segments:
            inputs["token_type_ids"] = token_type_ids
        if global_attention_mask is not None and self.uses_global_attention:
            inputs["global_attention_mask"] = global_attention_mask
        if labels is not None:
            inputs["start_positions"], inputs["end_positions"] = labels[:, 0], labels[:, 1]
        output = self.model(**inputs)
        return SpanOutput(output.loss, torch.stack([output.start_logits, output.end_logits], dim=-1))


def window_starts(context_tokens: int, window: int, stride: int) -> list[int]:
    """First context token of each window: every ``stride`` tokens until a window reaches the end.

    At least one window, even for an empty context, so no question goes without a prediction.
    """
    starts = [0]
    while starts[-1] + window < context_tokens:
        starts.append(starts[-1] + stride)
    return starts


class ExtractiveQA(Formulation):
    """Span extraction over sliding windows (Yang et al. 2022, Methods); emrQA and BioASQ factoid."""

    name = "extractive-qa"
    schemas = ("extractive-qa",)

    def setup(self) -> None:
        if not getattr(self.tokenizer, "is_fast", False):
            raise ValueError("extractive QA needs a fast tokenizer: answers are mapped back through character offsets")
        inputs = {slug: self.task.metric(slug).inputs for slug in self.task.metric_slugs}
        if set(inputs.values()) not in ({"predictions"}, {"ranked"}):
            raise ValueError(
                f"dataset {self.dataset.slug!r}: extractive QA predicts one answer per question for answer metrics "
                f"or ranked answers for ranked ones, not both; its metrics read {inputs}"
            )
        self.template = SpecialTemplate.of(self.tokenizer)
        if not self.template.pair[0]:
            raise ValueError("the tokenizer's pair template has no leading [CLS] for windows without the answer")
        self.context_per_window = self.options.qa_window - self.template.specials(pair=True)
        if self.context_per_window < self.options.qa_stride:
            raise ValueError(
                f"--qa-window {self.options.qa_window} leaves {self.context_per_window} context tokens after the "
                f"{self.template.specials(pair=True)} special tokens, fewer than --qa-stride {self.options.qa_stride}: "
                "windows would skip context"
            )
        options = self.options
        if options.max_question_length + options.qa_window > self.max_length:
            raise ValueError(
                f"--max-question-length {options.max_question_length} + --qa-window {options.qa_window} = "
                f"{options.max_question_length + options.qa_window} tokens, more than --max-length {self.max_length}"
            )

    @property
    def factoid(self) -> bool:
        """BioASQ-style scoring: ranked answers, merged over a question's snippets."""
        return self.task.metric(self.dataset.metric).inputs == "ranked"

    def describe(self) -> dict:
        return {
            "name": self.name,
            "max_question_length": self.options.max_question_length,
            "qa_window": self.options.qa_window,
            "context_tokens_per_window": self.context_per_window,
            "qa_stride": self.options.qa_stride,
            "max_answer_length": self.options.max_answer_length,
            "n_best": self.options.n_best,
        }

    # -- encoding ------------------------------------------------------------------------------

    def encode(self, rows: Sequence[dict]) -> list[Feature]:
        """One :class:`QAFeature` per window of each question; each distinct context is tokenized once.

        emrQA asks dozens of questions about each clinical note, so the notes' token ids and offsets
        are computed once and every question's windows are cut from them.
        """
        backend = self.tokenizer.backend_tokenizer
        questions = backend.encode_batch([row["question"] for row in rows], add_special_tokens=False)
        unique = list(dict.fromkeys(row["context"] for row in rows))
        contexts = {
            text: (encoding.ids, np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2))
            for text, encoding in zip(unique, backend.encode_batch(unique, add_special_tokens=False), strict=True)
        }
        features: list[Feature] = []
        for index, row in enumerate(rows):
            features.extend(self._windows(index, row, questions[index].ids, *contexts[row["context"]]))
        return features

    def _windows(
        self, index: int, row: dict, question_ids: list[int], context_ids: list[int], offsets: np.ndarray
    ) -> list[QAFeature]:
        question_ids = question_ids[: self.options.max_question_length]
        before, between, _ = self.template.pair
        context_start = len(before) + len(question_ids) + len(between)
        global_positions = [0, *range(len(before), len(before) + len(question_ids))]
        answer = _first_answer(row)
        features = []
        for start in window_starts(len(context_ids), self.context_per_window, self.options.qa_stride):
            stop = min(start + self.context_per_window, len(context_ids))
            input_ids, token_type_ids = self.template.build(question_ids, context_ids[start:stop])
            features.append(
                QAFeature(
                    input_ids=input_ids,
                    token_type_ids=token_type_ids,
                    labels=_targets(offsets[start:stop], context_start, answer),
                    example=index,
                    context_start=context_start,
                    window_start=start,
                    offsets=offsets[start:stop],
                    global_positions=global_positions,
                )
            )
        return features

    # -- model and batches ------------------------------------------------------------------

    def build_model(self, source: ModelSource) -> torch.nn.Module:
        # A model built from scratch gets the tokenizer's padding id: RoBERTa and Longformer number
        # positions from it, and their default (1) is [UNK] in a WordPiece vocabulary.
        overrides = {"pad_token_id": self.tokenizer.pad_token_id} if source.model_dir is None else {}
        return SpanExtractionModel(source.head_model(AutoModelForQuestionAnswering, **overrides))

    def collate(self, features: Sequence[Feature], pad_id: int) -> dict[str, torch.Tensor]:
        """Padded ids (the shared collate), ``labels`` as ``(batch, 2)`` and the global attention mask."""
        batch = collate(features, pad_id)
        batch["labels"] = torch.tensor([feature.labels for feature in features], dtype=torch.long)
        global_mask = torch.zeros_like(batch["attention_mask"])
        for row, feature in enumerate(features):
            global_mask[row, feature.global_positions] = 1
        batch["global_attention_mask"] = global_mask
        return batch

    # -- decoding ---------------------------------------------------------------------------

    def decode(
        self, features: Sequence[Feature], logits: Sequence[np.ndarray], rows: Sequence[dict], model: torch.nn.Module
    ) -> list:
        """emrQA: each question's best answer text. BioASQ: each question's ranked ``n_best`` answer texts."""
        windows: list[list[int]] = [[] for _ in rows]
        for position, feature in enumerate(features):
            windows[feature.example].append(position)
        ranked = [
            _with_probabilities(self._best_texts(row["context"], [(features[p], logits[p]) for p in windows[index]]))
            for index, row in enumerate(rows)
        ]
        if not self.factoid:
            return [answers[0][0] if answers else "" for answers in ranked]
        return self._merge_snippets(rows, ranked)

    def _best_texts(self, context: str, windows: list[tuple[QAFeature, np.ndarray]]) -> list[tuple[str, float]]:
        """The ``n_best`` best distinct answer texts over a question's windows, with their scores.

        Each window first offers only its ``4 * n_best`` best spans; that answer is exact when no span
        a window held back scores above the last answer kept, and is recomputed from every span otherwise.
        """
        n_best = self.options.n_best
        spans, held_back = [], -math.inf
        for feature, feature_logits in windows:
            window_spans, window_held_back = self._window_spans(feature, feature_logits, 4 * n_best)
            spans.extend(window_spans)
            held_back = max(held_back, window_held_back)
        answers = _distinct_texts(context, spans, n_best)
        if held_back == -math.inf or (len(answers) == n_best and held_back < answers[-1][1]):
            return answers
        spans = [span for feature, feature_logits in windows for span in self._window_spans(feature, feature_logits)[0]]
        return _distinct_texts(context, spans, n_best)

    def _window_spans(
        self, feature: QAFeature, logits: np.ndarray, limit: int | None = None
    ) -> tuple[list[tuple[float, int, int]], float]:
        """``(start + end logit, first char, end char)`` of the window's valid spans, and the best score left out.

        Valid: both ends inside the context, ``start <= end``, at most ``max_answer_length`` tokens.
        With ``limit``, only the best ``limit`` spans are returned.
        """
        n = len(feature.offsets)
        if n == 0:
            return [], -math.inf
        start_logits = logits[feature.context_start : feature.context_start + n, 0]
        end_logits = logits[feature.context_start : feature.context_start + n, 1]
        lengths = range(min(self.options.max_answer_length, n))
        first = np.concatenate([np.arange(n - length) for length in lengths])
        last = first + np.concatenate([np.full(n - length, length) for length in lengths])
        score = start_logits[first] + end_logits[last]
        held_back = -math.inf
        if limit is not None and limit < len(score):
            order = np.argpartition(-score, limit - 1)
            held_back = float(score[order[limit:]].max())
            chosen = order[:limit]
            score, first, last = score[chosen], first[chosen], last[chosen]
        spans = [
            (float(s), int(feature.offsets[a, 0]), int(feature.offsets[b, 1]))
            for s, a, b in zip(score, first, last, strict=True)
        ]
        return spans, held_back

    def _merge_snippets(self, rows: Sequence[dict], ranked: list[list[tuple[str, float]]]) -> list[list[str]]:
        """Each row gets its question's answers over all of its snippets, by probability (BioBERT)."""
        merged: dict[str, list[tuple[str, float]]] = {}
        for row, answers in zip(rows, ranked, strict=True):
            merged.setdefault(question_key(row["id"]), []).extend(answers)
        lists = {}
        for key, answers in merged.items():
            texts: list[str] = []
            seen: set[str] = set()
            for text, _probability in sorted(answers, key=lambda pair: -pair[1]):
                if text.lower() not in seen:
                    seen.add(text.lower())
                    texts.append(text)
            lists[key] = texts[: self.options.n_best]
        return [list(lists[question_key(row["id"])]) for row in rows]

    # -- scoring ----------------------------------------------------------------------------

    def score(self, rows: Sequence[dict], predicted: Sequence, logits: Sequence[np.ndarray]) -> dict:
        """SQuAD F1 and EM (emrQA) or strict/lenient accuracy and MRR per question (BioASQ factoid).

        A split without any gold answer (BioBERT's BioASQ test file) has undefined scores (None);
        a split where only some questions lack one is an error, since dropping them would inflate scores.
        """
        slugs = self.task.metric_slugs
        if self.factoid:
            gold_by_question: dict[str, list[str]] = {}
            first_row: dict[str, int] = {}
            for index, row in enumerate(rows):
                key = question_key(row["id"])
                first_row.setdefault(key, index)
                known = gold_by_question.setdefault(key, [])
                known.extend(text for text in row["answers"]["text"] if text not in known)
            gold = list(gold_by_question.values())
            pred = [predicted[first_row[key]] for key in gold_by_question]
        else:
            gold = [list(row["answers"]["text"]) for row in rows]
            pred = list(predicted)
        unanswered = sum(not answers for answers in gold)
        if unanswered == len(gold):
            return dict.fromkeys(slugs)
        if unanswered:
            raise ValueError(
                f"{unanswered} of {len(gold)} questions have no gold answer, so the split cannot be scored"
            )
        return {slug: self.task.metric(slug).compute(gold, pred) for slug in slugs}


def question_key(example_id: str) -> str:
    """The question an example belongs to: BioBERT's ``<question id>_<nnn>`` ids share ``<question id>``."""
    match = _SNIPPET_ID.match(example_id)
    return match["question"] if match else example_id


def _first_answer(row: dict) -> tuple[int, int] | None:
    """Character span of the first gold answer (Yang et al. 2022 train on one), or None without answers."""
    answers = row["answers"]
    if not answers["text"]:
        return None
    start = int(answers["answer_start"][0])
    return start, start + len(answers["text"][0])


def _targets(offsets: np.ndarray, context_start: int, answer: tuple[int, int] | None) -> list[int]:
    """``[start, end]`` positions of the answer's tokens in the sequence, or ``[0, 0]`` ([CLS]).

    As ``run_qa``: the start is the last token starting at or before the answer's first character,
    the end the first token ending at or after its last; the whole answer must be in the window.
    """
    if answer is None or not len(offsets):
        return [NO_ANSWER, NO_ANSWER]
    first_char, end_char = answer
    if offsets[0, 0] > first_char or offsets[-1, 1] < end_char:
        return [NO_ANSWER, NO_ANSWER]
    start = int(np.searchsorted(offsets[:, 0], first_char, side="right")) - 1
    end = int(np.searchsorted(offsets[:, 1], end_char, side="left"))
    return [context_start + start, context_start + end]


def _distinct_texts(context: str, spans: list[tuple[float, int, int]], n_best: int) -> list[tuple[str, float]]:
    """The best ``n_best`` spans with distinct texts (case-insensitive, as BioASQ matches), with their scores."""
    kept: list[tuple[str, float]] = []
    seen: set[str] = set()
    for score, first, end in sorted(spans, key=lambda span: (-span[0], span[1], span[2])):
        text = context[first:end].strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            kept.append((text, score))
            if len(kept) == n_best:
                break
    return kept


def _with_probabilities(answers: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores turned into the softmax over the n-best list, as BERT's ``run_squad`` reports them."""
    if not answers:
        return []
    top = answers[0][1]
    weights = [math.exp(score - top) for _, score in answers]
    total = sum(weights)
    return [(text, weight / total) for (text, _), weight in zip(answers, weights, strict=True)]
