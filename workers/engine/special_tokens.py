"""Where a tokenizer puts its special tokens around one text or a pair, read off the tokenizer itself.

Formulations that assemble inputs from pieces (QA windows, document snippets) cannot call the
tokenizer on each piece; they add the special tokens themselves, exactly where the tokenizer's
own template would, so BERT's ``[CLS] A [SEP] B [SEP]`` and RoBERTa's ``<s> A </s></s> B </s>``
both come out right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class SpecialTemplate:
    """Where a tokenizer puts its special tokens around one text or a pair, and their segment ids.

    Read off the tokenizer itself (its mask token, a single id, stands in for each text), so BERT's
    ``[CLS] A [SEP] B [SEP]`` and RoBERTa's ``<s> A </s></s> B </s>`` both come out right.
    """

    single: tuple[tuple[int, ...], tuple[int, ...]]  # ids before, after A
    single_types: tuple[tuple[int, ...], tuple[int, ...], int]  # types before, after, of A
    pair: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # before A, between, after B
    pair_types: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]  # ... of A, of B

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase) -> SpecialTemplate:
        marker_token = tokenizer.mask_token or tokenizer.unk_token
        if marker_token is None:
            raise ValueError("the tokenizer has neither a mask nor an unknown token to locate its special tokens with")
        marker = tokenizer.convert_tokens_to_ids(marker_token)
        one = tokenizer(marker_token, return_token_type_ids=True)
        two = tokenizer(marker_token, marker_token, return_token_type_ids=True)
        ids, types = list(one["input_ids"]), list(one["token_type_ids"])
        pair_ids, pair_types = list(two["input_ids"]), list(two["token_type_ids"])
        if ids.count(marker) != 1 or pair_ids.count(marker) != 2:
            raise ValueError(f"cannot locate the tokenizer's special tokens: {marker_token!r} encodes as {ids}")
        i = ids.index(marker)
        a = pair_ids.index(marker)
        b = pair_ids.index(marker, a + 1)
        return cls(
            single=(tuple(ids[:i]), tuple(ids[i + 1 :])),
            single_types=(tuple(types[:i]), tuple(types[i + 1 :]), types[i]),
            pair=(tuple(pair_ids[:a]), tuple(pair_ids[a + 1 : b]), tuple(pair_ids[b + 1 :])),
            pair_types=(
                tuple(pair_types[:a]),
                tuple(pair_types[a + 1 : b]),
                tuple(pair_types[b + 1 :]),
                pair_types[a],
                pair_types[b],
            ),
        )

    def specials(self, pair: bool) -> int:
        return sum(map(len, self.pair)) if pair else sum(map(len, self.single))

    def build(self, first: Sequence[int], second: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
        """Input ids and segment ids of ``first`` (and ``second``) with the special tokens added."""
        if second is None:
            (before, after), (t_before, t_after, t_a) = self.single, self.single_types
            return [*before, *first, *after], [*t_before, *[t_a] * len(first), *t_after]
        (before, between, after), (t_before, t_between, t_after, t_a, t_b) = self.pair, self.pair_types
        ids = [*before, *first, *between, *second, *after]
        types = [*t_before, *[t_a] * len(first), *t_between, *[t_b] * len(second), *t_after]
        return ids, types
