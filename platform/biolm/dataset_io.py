"""Read official dataset files through an adapter, validate them, and build a DatasetDict.

Readers (in plugins) only parse: they turn files into example dicts in a
canonical schema, each tagged with ``"_where": "file:line"``. Everything a
demanding user needs from a failure -- the file, the line, what was expected --
comes from :class:`DataFormatError`, raised either by the reader (for syntax:
wrong columns, a broken line, bad encoding, an empty file) or by
:func:`validate_examples` here (for content: unknown labels, tag/token count
mismatches, overlapping or out-of-range spans, answers not found in their
context, a missing split). No Django, so workers and notebooks can load data too.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biolm.schemas import SCHEMAS
from biolm.specs import SPLIT_NAMES, DatasetSpec


class DataFormatError(ValueError):
    """Input that cannot be used, located by file and line."""

    def __init__(self, where: str | Path, message: str, line: int | None = None) -> None:
        self.where = f"{where}:{line}" if line is not None else str(where)
        self.message = message
        super().__init__(f"{self.where}: {message}")


# --- helpers for readers --------------------------------------------------------------------


def open_text(path: Path) -> Any:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz``."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line without newline)``; bad encoding and empty files are errors.

    Lines are decoded one at a time so a bad byte is reported on its own line.
    """
    if not path.exists():
        raise DataFormatError(path, "file not found")
    empty = True
    line_no = 0
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                empty = False
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    message = f"not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)"
                    raise DataFormatError(path, message, line_no) from None
                yield line_no, line.rstrip("\r\n")
    except (OSError, EOFError) as exc:  # e.g. a truncated gzip stream
        raise DataFormatError(path, f"cannot be read: {exc}", line_no + 1 if line_no else None) from exc
    if empty:
        raise DataFormatError(path, "file is empty")


def read_tsv(
    path: Path, columns: int | tuple[int, ...], header: tuple[str, ...] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, fields)`` of a tab-separated file with a fixed number of columns.

    ``header``, when given, must be the first line exactly; blank lines are skipped.
    """
    allowed = (columns,) if isinstance(columns, int) else columns
    lines = read_lines(path)
    if header is not None:
        for line_no, line in lines:
            fields = line.split("\t")
            if tuple(fields) != header:
                raise DataFormatError(path, f"expected the header {'<TAB>'.join(header)!r}, got {line[:80]!r}", line_no)
            break
    for line_no, line in lines:
        if not line.strip():
            continue
        fields = next(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_NONE))
        if len(fields) not in allowed:
            expected = " or ".join(str(n) for n in allowed)
            raise DataFormatError(path, f"expected {expected} tab-separated columns, found {len(fields)}", line_no)
        yield line_no, fields


def read_json(path: Path) -> Any:
    if not path.exists():
        raise DataFormatError(path, "file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise DataFormatError(path, f"not UTF-8 text ({exc.reason})", line) from exc
    if not text.strip():
        raise DataFormatError(path, "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc


def find_split_file(directory: Path, split: str, candidates: Mapping[str, tuple[str, ...]]) -> Path | None:
    """The first existing file among ``candidates[split]`` (e.g. ``dev.tsv`` or ``devel.tsv``)."""
    for name in candidates.get(split, ()):
        path = directory / name
        if path.exists():
            return path
    return None


# --- validation -----------------------------------------------------------------------------


@dataclass
class LoadedDataset:
    """A validated dataset: its examples per split and what the import should record."""

    spec: DatasetSpec
    splits: dict[str, list[dict]]
    label_set: list[str]
    fingerprint: str
    notes: list[str] = field(default_factory=list)

    @property
    def sizes(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.splits.items()}

    def to_datasetdict(self):
        from datasets import Dataset, DatasetDict

        features = SCHEMAS[self.spec.adapter.schema]
        return DatasetDict({name: Dataset.from_list(rows, features=features) for name, rows in self.splits.items()})

    def sizes_in_paper_units(self) -> dict[str, int]:
        """Each split counted in the unit the dataset's paper uses (mentions, PICO elements, ...).

        Papers count NER splits in entity mentions and PICO in tagged words, not sentences, so
        comparing imported sizes with the paper needs the same unit.
        """
        units = {s.name: s.unit for s in self.spec.splits}
        return {name: count_in_unit(rows, units.get(name, "examples")) for name, rows in self.splits.items()}

    def longest_examples(self, n: int = 3) -> list[dict]:
        """The longest inputs (in characters or words), so users see what the engine must handle."""
        found = []
        for split, rows in self.splits.items():
            for row in rows:
                found.append({"split": split, "id": row["id"], "length": example_length(row)})
        found.sort(key=lambda r: (-r["length"], r["split"], r["id"]))
        return found[:n]


def count_in_unit(rows: list[dict], unit: str) -> int:
    """Count ``rows`` in ``unit``: "mentions" are B tags, "PICO elements" non-O words, else examples."""
    if unit == "mentions":
        return sum(1 for row in rows for tag in row.get("tags", ()) if tag == "B" or tag.startswith("B-"))
    if unit == "PICO elements":
        return sum(1 for row in rows for tag in row.get("tags", ()) if tag != "O")
    return len(rows)


def example_length(row: Mapping[str, Any]) -> int:
    if "tokens" in row:
        return len(row["tokens"])
    text = row.get("context") or row.get("text") or ""
    return len(text) + len(row.get("text_pair") or "") + len(row.get("question") or "")


def resolve_reader(path: str) -> Callable[..., Mapping[str, list[dict]]]:
    module_name, _, function = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, function)


def load_dataset_files(spec: DatasetSpec, directory: Path) -> LoadedDataset:
    """Read ``directory`` with the dataset's adapter and validate every example."""
    if spec.adapter is None:
        raise DataFormatError(directory, f"dataset {spec.slug!r} has no adapter to read files with")
    directory = Path(directory)
    if not directory.is_dir():
        raise DataFormatError(directory, "is not a directory")
    reader = resolve_reader(spec.adapter.reader)
    splits = dict(reader(directory, **dict(spec.adapter.options)))
    notes = []
    for split in SPLIT_NAMES:
        if split not in splits or not splits[split]:
            if split in spec.adapter.optional_splits:
                splits.pop(split, None)
                notes.append(f"{split} split absent from this distribution")
                continue
            raise DataFormatError(directory, f"missing the {split} split (expected files for train, dev and test)")
    unknown = sorted(set(splits) - set(SPLIT_NAMES))
    if unknown:
        raise DataFormatError(directory, f"reader returned unknown splits {unknown}")
    label_set = validate_examples(spec, splits)
    return LoadedDataset(spec, splits, label_set, fingerprint_of(splits), notes)


def validate_examples(spec: DatasetSpec, splits: Mapping[str, list[dict]]) -> list[str]:
    """Check every example against its schema and the dataset's label set; return the labels seen.

    Strips the ``_where`` keys, so what remains is exactly the schema's fields.
    """
    adapter = spec.adapter
    schema = adapter.schema
    fields = set(SCHEMAS[schema])
    allowed = set(spec.labels)
    seen: set[str] = set()
    for split, rows in splits.items():
        ids: set[str] = set()
        for index, row in enumerate(rows):
            where = row.pop("_where", f"{split}[{index}]")
            missing = fields - set(row)
            extra = set(row) - fields
            if missing or extra:
                raise DataFormatError(
                    where, f"example has fields {sorted(row)}, expected {sorted(fields)} ({schema} schema)"
                )
            if row["id"] in ids:
                raise DataFormatError(where, f"duplicate example id {row['id']!r} in the {split} split")
            ids.add(row["id"])
            labels = _CHECKS[schema](row, where, adapter.multi_label)
            for label in labels:
                if allowed and label not in allowed:
                    raise DataFormatError(where, f"unknown label {label!r}; expected one of {sorted(allowed)}")
                seen.add(label)
    return sorted(seen)


def _check_text(value: object, where: str, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(where, f"{name} must be non-empty text, got {value!r}")


def _check_token_tagging(row: dict, where: str, multi_label: bool) -> list[str]:
    tokens, tags = row["tokens"], row["tags"]
    if not tokens:
        raise DataFormatError(where, "a sentence with no tokens")
    if len(tokens) != len(tags):
        raise DataFormatError(where, f"{len(tokens)} tokens but {len(tags)} tags; expected one tag per token")
    for token in tokens:
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise DataFormatError(where, f"token {token!r} is empty or contains white space")
    # A word in several PICO elements (seed 004 section 5) joins their tags with "|": I-PAR|I-INT.
    # Each part must be a known label; "O" or a repeat inside a join is a mistake.
    parts = []
    for tag in tags:
        if "|" not in tag:
            parts.append(tag)
            continue
        joined = tag.split("|")
        if "" in joined or "O" in joined or len(set(joined)) != len(joined):
            raise DataFormatError(where, f"tag {tag!r}: join distinct element tags with '|', without O")
        parts.extend(joined)
    return parts


def _check_classification(row: dict, where: str, multi_label: bool) -> list[str]:
    _check_text(row["text"], where, "text")
    if not isinstance(row["text_pair"], str):
        raise DataFormatError(where, "text_pair must be a string ('' for single-text tasks)")
    labels = row["labels"]
    if not multi_label and len(labels) != 1:
        raise DataFormatError(where, f"expected exactly one label, got {labels!r}")
    if len(set(labels)) != len(labels):
        raise DataFormatError(where, f"repeated labels {labels!r}")
    return list(labels)


def _check_regression(row: dict, where: str, multi_label: bool) -> list[str]:
    _check_text(row["text"], where, "text")
    _check_text(row["text_pair"], where, "text_pair")
    score = row["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise DataFormatError(where, f"score must be a finite number, got {score!r}")
    return []


def _check_span(span: Mapping, text: str, where: str, name: str) -> tuple[int, int]:
    start, end = span.get("start"), span.get("end")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise DataFormatError(
            where, f"{name} span [{start}, {end}) is out of range for a text of {len(text)} characters"
        )
    return start, end


def _check_relation(row: dict, where: str, multi_label: bool) -> list[str]:
    _check_text(row["text"], where, "text")
    head = _check_span(row["head"], row["text"], where, "head")
    tail = _check_span(row["tail"], row["text"], where, "tail")
    if head != tail and head[0] < tail[1] and tail[0] < head[1]:
        raise DataFormatError(where, f"head {list(head)} and tail {list(tail)} spans overlap without being identical")
    return [row["label"]]


def _check_extractive_qa(row: dict, where: str, multi_label: bool) -> list[str]:
    _check_text(row["question"], where, "question")
    _check_text(row["context"], where, "context")
    answers = row["answers"]
    if len(answers["text"]) != len(answers["answer_start"]):
        raise DataFormatError(where, "answers need one answer_start per answer text")
    for text, start in zip(answers["text"], answers["answer_start"], strict=True):
        if not (start >= 0 and row["context"][start : start + len(text)] == text):
            raise DataFormatError(where, f"answer {text[:40]!r} is not found at offset {start} of its context")
    return []


_CHECKS = {
    "token-tagging": _check_token_tagging,
    "classification": _check_classification,
    "regression": _check_regression,
    "relation": _check_relation,
    "extractive-qa": _check_extractive_qa,
}


def fingerprint_of(splits: Mapping[str, list[dict]]) -> str:
    """A content hash of the canonical examples: equal data gives an equal fingerprint."""
    digest = hashlib.sha256()
    for split in sorted(splits):
        digest.update(split.encode())
        for row in splits[split]:
            digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
            digest.update(b"\n")
    return digest.hexdigest()[:16]
