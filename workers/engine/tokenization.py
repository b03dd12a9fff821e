"""Tokenizers for the engine: a checkpoint's own, or a WordPiece vocabulary trained on the task's text.

A model built from scratch from an architecture preset has no vocabulary; rather than
download one (impossible offline, and wrong for a biomedical model anyway, seed 004
section 3), we train a WordPiece vocabulary of the preset's size on the training texts,
deterministically, as BERT and PubMedBERT do on their corpora.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(texts: Iterable[str], vocab_size: int, lowercase: bool = True) -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece tokenizer trained on ``texts``."""
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tokenizer.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def load_tokenizer(directory: Path) -> PreTrainedTokenizerBase:
    """The tokenizer saved with a local checkpoint (never downloaded)."""
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    if not tokenizer.is_fast:
        raise ValueError(f"{directory}: the engine needs a fast tokenizer (word alignment for token tasks)")
    return tokenizer
