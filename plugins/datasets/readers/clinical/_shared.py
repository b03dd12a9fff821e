"""What the clinical readers share: annotated text -> BIO-tagged examples, split discovery, dev carve-outs.

Why these choices (they apply to every character-offset format: i2b2 2006/2012/2014, n2c2 2018,
and to i2b2 2010 once its line:token offsets are turned into characters):

* Tokens. Pre-tokenised corpora (i2b2 2010 and 2012: one sentence per line, tokens separated by
  spaces) keep their tokens (``tokenizer="whitespace"``). Raw notes (i2b2 2006/2014, n2c2 2018)
  are cut into words and single punctuation marks (``tokenizer="words"``, ``\\w+|[^\\w\\s]``,
  what BERT's basic tokenizer does before word pieces), so ``Smith,`` never hides a name.
  A token that an annotation boundary falls inside (``75yo`` with the AGE ``75``) is split at
  that boundary, so every mention covers whole tokens and its exact text survives.
* Flat tagging. BIO cannot represent two mentions sharing a token. Exact duplicates (same
  span, same type) are merged silently; other overlaps follow the ``overlaps`` policy:
  ``"error"`` (a DataFormatError naming both annotations' file and line) or ``"longest"``
  (keep the longest mention, then the earliest, then the one annotated first; the others are
  dropped and counted in the log).
* Units. ``"line"``: one example per non-empty line (a mention crossing a line break is tagged
  as one piece per line, each starting with B-); ``"sentence"``: blank lines, and ``[.!?]`` after a
  letter followed by white space and a capital letter, end a sentence, except inside a mention;
  ``"document"``: the whole note as one example, never truncated (the point of Li et al. 2022 is that
  long notes stay long; cutting them to a model's window is the engine's job).
* Dev splits. The i2b2/n2c2 releases have train and test only. Unless a ``dev/`` directory (or
  file) is given, dev is carved out of train by document (by patient for i2b2 2014, whose
  records come in series per patient): the ``round(dev_fraction * n)`` documents (at least one,
  at most n - 1) whose SHA-256 of the document id is smallest. That is deterministic, does not
  depend on file order or the machine, and a document never straddles train and dev.
"""

from __future__ import annotations

import hashlib
import logging
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from biolm.dataset_io import DataFormatError
from biolm.errors import Where

log = logging.getLogger("plugins.datasets.readers.clinical")

SPLITS = ("train", "dev", "test")
TOKENIZERS = {"whitespace": re.compile(r"\S+"), "words": re.compile(r"\w+|[^\w\s]")}
UNITS = ("document", "sentence", "line")
OVERLAP_POLICIES = ("error", "longest")
# A sentence ends at a blank line, or after a word ending in . ! ? (not "1." of a numbered list)
# followed by white space and a capital letter.
_SENTENCE_GAP = re.compile(r"\n[^\S\n]*\n\s*|(?<=[^\W\d_][.!?])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Mention:
    """An annotated span in character offsets (end exclusive) and where it was annotated."""

    start: int
    end: int
    type: str
    where: str  # "file:line" of the annotation


def check_option(value: object, allowed: Sequence[str], name: str, where: Path) -> None:
    if value not in allowed:
        raise DataFormatError(where, f"adapter option {name}={value!r} is not one of {list(allowed)}")


def decode_utf8(path: Path) -> str:
    """The file's text; a missing or empty file, or one that is not UTF-8, is an error with its line."""
    if not path.exists():
        raise DataFormatError(path, "file not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFormatError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})", line) from None
    if not text.strip():
        raise DataFormatError(path, "file is empty")
    return text.removeprefix("\ufeff")


class LineIndex:
    """Character offset -> 1-based line number, for ``_where`` and error messages."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._first = first_line

    def line(self, offset: int) -> int:
        return self._first + bisect_left(self._newlines, offset)


# --- overlaps ---------------------------------------------------------------------------------


def resolve_overlaps(mentions: Iterable[Mention], policy: str, what: str = "mention") -> list[Mention]:
    """Mentions sorted by start, without duplicates or overlaps (see the module docstring)."""
    unique: dict[tuple[int, int, str], Mention] = {}
    for mention in mentions:
        unique.setdefault((mention.start, mention.end, mention.type), mention)
    ordered = sorted(unique.values(), key=lambda m: (m.start, -m.end))
    if policy == "error":
        previous: Mention | None = None
        for mention in ordered:
            if previous is not None and mention.start < previous.end:
                raise DataFormatError(
                    mention.where,
                    f"{mention.type} {what} [{mention.start}, {mention.end}) overlaps {previous.type} {what} "
                    f"[{previous.start}, {previous.end}) annotated at {previous.where}; flat BIO tagging cannot "
                    "represent overlapping mentions (adapter option overlaps='longest' keeps the longer one)",
                )
            if previous is None or mention.end > previous.end:
                previous = mention
        return ordered
    kept: list[Mention] = []
    for mention in sorted(ordered, key=lambda m: (-(m.end - m.start), m.start)):
        if all(mention.end <= k.start or k.end <= mention.start for k in kept):
            kept.append(mention)
    dropped = len(ordered) - len(kept)
    if dropped:
        log.info("dropped %d overlapping %s(s) (kept the longest)", dropped, what)
    return sorted(kept, key=lambda m: m.start)


# --- segmentation and tagging -----------------------------------------------------------------


def segments(text: str, unit: str, mentions: Sequence[Mention] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each line, sentence or the document, without surrounding white space."""
    if unit == "document":
        bounds = [(0, len(text))]
    elif unit == "line":
        bounds, start = [], 0
        for line in text.split("\n"):
            bounds.append((start, start + len(line)))
            start += len(line) + 1
    else:
        inside = _Cover(mentions)
        bounds, start = [], 0
        for gap in _SENTENCE_GAP.finditer(text):
            if inside.overlaps(gap.start(), gap.end()):
                continue  # never end a sentence inside a mention
            bounds.append((start, gap.start()))
            start = gap.end()
        bounds.append((start, len(text)))
    trimmed = []
    for start, end in bounds:
        chunk = text[start:end]
        stripped = chunk.strip()
        if stripped:
            lead = len(chunk) - len(chunk.lstrip())
            trimmed.append((start + lead, start + lead + len(stripped)))
    return trimmed


class _Cover:
    """The union of the mentions' spans, to ask quickly whether a range touches any mention."""

    def __init__(self, mentions: Sequence[Mention]) -> None:
        merged: list[list[int]] = []
        for mention in sorted(mentions, key=lambda m: m.start):
            if merged and mention.start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], mention.end)
            else:
                merged.append([mention.start, mention.end])
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        index = bisect_right(self._ends, start)
        return index < len(self._starts) and self._starts[index] < end


@dataclass
class TaggedSegment:
    start: int
    end: int
    tokens: list[str]
    tags: list[str]
    token_starts: list[int] = ()  # character offset of each token
    annotated_at: list[str | None] = ()  # per token: "file:line" of the annotation that tagged it


def tag_segments(text: str, mentions: Sequence[Mention], unit: str, tokenizer: str) -> list[TaggedSegment]:
    """Tokenise ``text`` per unit and tag the mentions in BIO.

    ``mentions`` must not overlap (see :func:`resolve_overlaps`), so sorted by start they are
    also sorted by end and the mentions touching a segment are a contiguous run.
    """
    pattern = TOKENIZERS[tokenizer]
    cuts = sorted({m.start for m in mentions} | {m.end for m in mentions})
    by_start = sorted(mentions, key=lambda m: m.start)
    starts = [m.start for m in by_start]
    ends = [m.end for m in by_start]
    covered: set[Mention] = set()
    tagged = []
    for seg_start, seg_end in segments(text, unit, mentions):
        spans: list[tuple[int, int]] = []
        for match in pattern.finditer(text, seg_start, seg_end):
            a, b = match.span()
            index = bisect_right(cuts, a)
            while index < len(cuts) and cuts[index] < b:
                spans.append((a, cuts[index]))
                a = cuts[index]
                index += 1
            spans.append((a, b))
        if not spans:
            continue
        tags = ["O"] * len(spans)
        annotated_at: list[str | None] = [None] * len(spans)
        token_starts = [s for s, _ in spans]
        for mention in by_start[bisect_right(ends, seg_start) : bisect_left(starts, seg_end)]:
            lo, hi = max(mention.start, seg_start), min(mention.end, seg_end)
            first = bisect_left(token_starts, lo)
            last = first
            while last < len(spans) and spans[last][1] <= hi:
                last += 1
            if last == first:
                continue
            covered.add(mention)
            tags[first] = f"B-{mention.type}"
            for k in range(first + 1, last):
                tags[k] = f"I-{mention.type}"
            annotated_at[first:last] = [mention.where] * (last - first)
        tokens = [text[a:b] for a, b in spans]
        tagged.append(TaggedSegment(seg_start, seg_end, tokens, tags, token_starts, annotated_at))
    for mention in mentions:
        if mention not in covered:
            raise DataFormatError(
                mention.where,
                f"{mention.type} span [{mention.start}, {mention.end}) {text[mention.start : mention.end]!r} "
                "covers no token (only white space)",
            )
    return tagged


def tagged_examples(
    text: str,
    mentions: Sequence[Mention],
    *,
    document_id: str,
    source: Path,
    first_line: int,
    unit: str,
    tokenizer: str,
) -> list[dict]:
    """Token-tagging examples of one document.

    Ids are ``<document>`` (unit document), ``<document>-<line>`` (unit line, the line in
    ``source``) or ``<document>-<n>`` (unit sentence, n counting the document's sentences from 1).
    ``first_line`` is the line of ``source`` where ``text`` starts, so ``_where`` points into the file.
    """
    lines = LineIndex(text, first_line)
    examples = []
    for number, segment in enumerate(tag_segments(text, mentions, unit, tokenizer), start=1):
        line = lines.line(segment.start)
        suffix = {"document": "", "line": f"-{line}", "sentence": f"-{number}"}[unit]
        examples.append(
            {
                "id": f"{document_id}{suffix}",
                "document_id": document_id,
                "tokens": segment.tokens,
                "tags": segment.tags,
                # A tag's value comes from its annotation's line (a .con, .ann or XML element), a
                # token's from the text: errors about either name that line, not the segment's first.
                "_where": Where(
                    f"{source}:{line}",
                    items=[
                        annotated or f"{source}:{lines.line(start)}"
                        for annotated, start in zip(segment.annotated_at, segment.token_starts, strict=True)
                    ],
                ),
            }
        )
    return examples


# --- splits -----------------------------------------------------------------------------------


def split_directories(directory: Path, *, dev_optional: bool = True) -> dict[str, Path | None]:
    """``train/``, ``dev/`` and ``test/`` under ``directory``; dev may be absent (it is carved out)."""
    found: dict[str, Path | None] = {}
    for split in SPLITS:
        path = directory / split
        if path.is_dir():
            found[split] = path
        elif split == "dev" and dev_optional:
            found[split] = None
        else:
            raise DataFormatError(
                directory, f"missing the {split} split: expected a directory {split}/ with the {split} documents"
            )
    return found


def dev_documents(keys: Iterable[str], fraction: float, where: Path) -> set[str]:
    """The documents (or patients) of train that become dev; see the module docstring."""
    unique = sorted(set(keys))
    if not isinstance(fraction, int | float) or not 0 < fraction < 1:
        raise DataFormatError(where, f"adapter option dev_fraction must be between 0 and 1, got {fraction!r}")
    if len(unique) < 2:
        raise DataFormatError(
            where,
            f"cannot carve a dev split out of {len(unique)} training document(s); "
            "provide a dev/ directory or more training documents",
        )
    count = min(len(unique) - 1, max(1, round(len(unique) * fraction)))
    ranked = sorted(unique, key=lambda key: hashlib.sha256(key.encode("utf-8")).hexdigest())
    return set(ranked[:count])


def carve_dev(
    splits: dict[str, list[dict]], fraction: float, where: Path, group: Callable[[dict], str] | None = None
) -> dict[str, list[dict]]:
    """``{"train", "dev", "test"}`` with dev taken out of train by document (or by ``group(example)``)."""
    key = group or (lambda example: example["document_id"])
    train = splits["train"]
    dev_keys = dev_documents((key(e) for e in train), fraction, where)
    return {
        "train": [e for e in train if key(e) not in dev_keys],
        "dev": [e for e in train if key(e) in dev_keys],
        "test": splits["test"],
    }


def read_split_directories(
    directory: Path,
    read_split: Callable[[str, Path], list[dict]],
    dev_fraction: float,
    group: Callable[[dict], str] | None = None,
) -> dict[str, list[dict]]:
    """Read ``train/``, ``dev/`` and ``test/`` with ``read_split(split, path)``; carve dev out of train if absent."""
    dirs = split_directories(directory)
    splits = {split: read_split(split, path) for split, path in dirs.items() if path is not None}
    if dirs["dev"] is None:
        return carve_dev(splits, dev_fraction, dirs["train"], group)
    return in_split_order(splits)


def record_files(path: Path, suffix: str, expected: str) -> list[Path]:
    """The record files of one split directory; none at all is an error naming what was expected."""
    files = list(files_under(path, suffix))
    if not files:
        raise DataFormatError(path, f"no records: expected {expected}")
    return files


def in_split_order(splits: dict[str, list[dict]]) -> dict[str, list[dict]]:
    return {split: splits[split] for split in SPLITS if split in splits}


def files_under(directory: Path, suffix: str) -> Iterator[Path]:
    """Files with ``suffix`` anywhere under ``directory``, in a stable order, hidden files skipped."""
    for path in sorted(directory.rglob(f"*{suffix}")):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(directory).parts):
            yield path
