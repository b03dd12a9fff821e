"""Tokenizers for the engine: a checkpoint's own, or a WordPiece vocabulary trained on the task's text.

A model built from scratch from an architecture preset has no vocabulary; rather than
download one (impossible offline, and wrong for a biomedical model anyway, Gu et al.
2021, section 3), we learn a WordPiece vocabulary of the preset's size on the training texts,
as BERT and PubMedBERT do on their corpora.

The vocabulary is learned here rather than by ``tokenizers.trainers.WordPieceTrainer``:
that trainer breaks ties between equally frequent merges by hash-map order, which changes
from process to process, so the same data gave different vocabularies (even different
token sets) and the same seed gave different scores in two runs. The merges below are the
same greedy pair merging (most frequent adjacent pair, word-internal pieces prefixed
``##``), with ties broken by the pieces' text, so the result depends on the data only.
The normalizer, pre-tokenizer, special tokens and post-processor are the library's.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from biolm.errors import first_line
from workers.engine.word_counts import count_words

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CONTINUATION = "##"


def train_wordpiece(texts: Iterable[str], vocab_size: int, lowercase: bool = True) -> PreTrainedTokenizerFast:
    """A BERT-style WordPiece tokenizer learned on ``texts``; the same texts give the same ids in any process."""
    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words = count_words(texts, normalizer, pre_tokenizer, byte_level=False)
    return wordpiece_tokenizer(learn_wordpiece_vocabulary(words, vocab_size), lowercase=lowercase)


def wordpiece_tokenizer(vocab: list[str], *, lowercase: bool = True) -> PreTrainedTokenizerFast:
    """BERT's WordPiece tokenizer around ``vocab`` (ids in list order): its normaliser, pre-tokenizer and template."""
    tokenizer = Tokenizer(models.WordPiece({token: i for i, token in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")
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


def learn_wordpiece_vocabulary(words: Counter[str], vocab_size: int) -> list[str]:
    """Special tokens, every character (word-initial and ``##`` forms), then merged pieces in merge order.

    Greedy merging of the most frequent adjacent pair of pieces, counted over word frequencies;
    ties go to the alphabetically first pair. Stops at ``vocab_size`` or when no pair is left.
    """
    spelled = {word: [word[0], *(CONTINUATION + ch for ch in word[1:])] for word in words if word}
    alphabet = sorted({piece for pieces in spelled.values() for piece in pieces})
    vocab = [*SPECIAL_TOKENS, *(piece for piece in alphabet if piece not in SPECIAL_TOKENS)]
    known = set(vocab)
    if len(vocab) >= vocab_size:
        return vocab
    for _pair, merged in greedy_merges(words, spelled, lambda a, b: a + b.removeprefix(CONTINUATION)):
        if merged not in known:
            known.add(merged)
            vocab.append(merged)
            if len(vocab) >= vocab_size:
                break
    return vocab


def greedy_merges(
    words: Counter[str], spelled: dict[str, list[str]], join: Callable[[str, str], str]
) -> Iterator[tuple[tuple[str, str], str]]:
    """Merge the most frequent adjacent pair of pieces, again and again; yield each pair and its merge.

    Counts are word frequencies; ties go to the alphabetically first pair, so the merges depend
    on the data only (WordPiece and byte-level BPE learning share this). ``spelled`` (word ->
    pieces) is updated in place; the caller stops when its vocabulary is full.
    """
    pair_counts: Counter[tuple[str, str]] = Counter()
    where: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for word, pieces in spelled.items():
        for pair in itertools.pairwise(pieces):
            pair_counts[pair] += words[word]
            where[pair].add(word)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    while heap:
        negative, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative or negative == 0:
            continue  # a stale entry: the pair's count changed after it was pushed
        merged = join(*pair)
        changed: set[tuple[str, str]] = set()
        for word in sorted(where.pop(pair)):
            pieces, count = spelled[word], words[word]
            for old in itertools.pairwise(pieces):
                pair_counts[old] -= count
                changed.add(old)
            spelled[word] = pieces = _merge(pieces, pair, merged)
            for new in itertools.pairwise(pieces):
                pair_counts[new] += count
                where[new].add(word)
                changed.add(new)
        for key in changed:
            if pair_counts[key] > 0:
                heapq.heappush(heap, (-pair_counts[key], key))
            else:
                pair_counts.pop(key, None)
                where.pop(key, None)
        yield pair, merged


def _merge(pieces: list[str], pair: tuple[str, str], merged: str) -> list[str]:
    out, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and pieces[i] == pair[0] and pieces[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(pieces[i])
            i += 1
    return out


def load_tokenizer(directory: Path) -> PreTrainedTokenizerBase:
    """The tokenizer saved with a local checkpoint (never downloaded)."""
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # the tokenizers library raises bare Exceptions: any failure here is the files'
        raise ValueError(f"--model {directory}: its tokenizer cannot be loaded: {first_line(exc)}") from exc
    if not tokenizer.is_fast:
        raise ValueError(f"{directory}: the engine needs a fast tokenizer (word alignment for token tasks)")
    return tokenizer


BPE_SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def byte_level_bpe_tokenizer(
    vocab: list[str], merges: list[tuple[str, str]], *, lowercase: bool = False
) -> PreTrainedTokenizerFast:
    """RoBERTa's byte-level BPE tokenizer around ``vocab`` (ids in list order) and ``merges`` (in rank order)."""
    tokenizer = Tokenizer(models.BPE({token: i for i, token in enumerate(vocab)}, merges))
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", vocab.index("</s>")), ("<s>", vocab.index("<s>")), trim_offsets=True, add_prefix_space=False
    )
    return roberta_style(tokenizer)


def roberta_style(backend: Tokenizer) -> PreTrainedTokenizerFast:
    """A fast tokenizer with RoBERTa's special tokens (``<s>``, ``</s>``, ``<pad>``, ``<unk>``, ``<mask>``)."""
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
