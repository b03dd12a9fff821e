"""The 13-gram contamination scan the vectorised one replaced (issue 10's Python tuple hashing): the reference.

The vectorised scan (:mod:`workers.engine.pretrain.contamination`) must give the same report as
this one on the same text; the corpus-preparation benchmark times the two against each other and
the tests compare them on real text and edge cases. One copy, so both hold the same reference.
"""

from __future__ import annotations

from collections.abc import Iterable

N, MIN_WORDS = 13, 8


def _key(sequence: list[str]) -> int:
    return hash(tuple(sequence))


def reference_contamination(documents: Iterable[str], texts: dict[str, list[list[list[str]]]]) -> dict:
    """Each dataset's report (examples, too short to judge, contaminated, share), from its test texts' word lists."""
    from workers.engine.pretrain.contamination import words

    def shingles(tokens: list[str]) -> set[int]:
        if len(tokens) < MIN_WORDS:
            return set()
        if len(tokens) <= N:
            return {_key(tokens)}
        return {_key(tokens[i : i + N]) for i in range(len(tokens) - N + 1)}

    sets = {slug: [set().union(*(shingles(t) for t in row)) for row in rows] for slug, rows in texts.items()}
    short_lengths = sorted({len(t) for rows in texts.values() for row in rows for t in row if MIN_WORDS <= len(t) < N})
    wanted: set[int] = set().union(*(example for examples in sets.values() for example in examples))
    seen: set[int] = set()
    for document in documents:
        tokens = words(document)
        for i in range(max(len(tokens) - N + 1, 1)):
            if (key := _key(tokens[i : i + N])) in wanted:
                seen.add(key)
        for length in short_lengths:
            for i in range(len(tokens) - length + 1):
                if (key := _key(tokens[i : i + length])) in wanted:
                    seen.add(key)
    report = {}
    for slug, examples in sorted(sets.items()):
        hit = sum(1 for example in examples if example & seen)
        judged = sum(1 for example in examples if example)
        report[slug] = {"test_examples": len(examples), "too_short_to_judge": len(examples) - judged,
                        "contaminated": hit, "share": hit / judged if judged else None}  # fmt: skip
    return report
