"""Read official dataset files through an adapter, validate them, and build a DatasetDict.

Readers (in plugins) only parse: they turn files into example dicts in a
canonical schema, each tagged with ``"_where": "file:line"``. Everything a
demanding user needs from a failure -- the file, the line, what was expected --
comes from :class:`DataFormatError`, raised either by the reader (for syntax:
wrong columns, a broken line, bad encoding, an empty file) or by
:func:`validate_examples` here (for content: unknown labels, tag/token count
mismatches, overlapping or out-of-range spans, answers not found in their
context, a missing split). No Django, so workers and notebooks can load data too.

A reader that returns without an example at all, or with none for a split the dataset needs,
broke its contract (a file it cannot use is refused with :class:`DataFormatError`, never read as
nothing): :func:`load_dataset_files` raises :class:`~biolm.specs.ContractBreach`, which
:func:`biolm.plugin_faults.blame` charges to the plugin, "dataset reader 'x' yielded no
examples from DIR". A split the distribution legitimately lacks (an adapter's
``optional_splits``) is only noted as absent.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biolm.errors import DataFormatError, locate
from biolm.schemas import get_schema
from biolm.specs import SPLIT_NAMES, ContractBreach, DatasetSpec, resolve_implementation

__all__ = [
    "DataFormatError",
    "LoadedDataset",
    "RepeatedKeyError",
    "find_split_file",
    "fingerprint_of",
    "load_dataset_files",
    "open_text",
    "read_json",
    "read_lines",
    "read_tsv",
    "reject_repeated_keys",
    "require_examples",
    "validate_examples",
]


# --- helpers for readers --------------------------------------------------------------------


def open_text(path: Path) -> Any:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz``."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


MAX_LINE_BYTES = 1024 * 1024  # no line of any distribution format comes near; a file without newlines would


def read_lines(path: Path, max_line_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line without newline)``; bad encoding and empty files are errors.

    Lines are decoded one at a time so a bad byte is reported on its own line. A UTF-8 byte-order
    mark at the start of the file is dropped (Windows editors write one; it would otherwise stick
    to the first token), CRLF endings are read like LF, and a line longer than ``max_line_bytes``
    (default :data:`MAX_LINE_BYTES`) is an error rather than a read of the whole file into memory.
    """
    if not path.exists():
        raise DataFormatError(path, "file not found")
    limit = max_line_bytes or MAX_LINE_BYTES
    empty = True
    line_no = 0
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as handle:
            while raw := handle.readline(limit + 1):
                line_no += 1
                empty = False
                if len(raw) > limit:
                    raise DataFormatError(path, f"a line longer than {limit:,} bytes; is this the right file?", line_no)
                try:
                    line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
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
    text = text.removeprefix("\ufeff")  # a byte-order mark is not JSON
    if not text.strip():
        raise DataFormatError(path, "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc


class RepeatedKeyError(ValueError):
    """A JSON object names the same key twice (``json`` would silently keep the last value)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def reject_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for ``json.loads`` that raises :class:`RepeatedKeyError` on a repeated key."""
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise RepeatedKeyError(key)
        result[key] = value
    return result


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
    # {test example id: typed tags} read by the adapter's ``test_types``; not part of the fingerprint
    test_types: dict[str, list[str]] | None = None

    @property
    def sizes(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.splits.items()}

    def to_datasetdict(self):
        from datasets import Dataset, DatasetDict

        features = get_schema(self.spec.adapter.schema).features()
        return DatasetDict({name: Dataset.from_list(rows, features=features) for name, rows in self.splits.items()})

    def sizes_in_paper_units(self) -> dict[str, int]:
        """Each split counted in the unit the dataset's paper uses (mentions, PICO elements, ...).

        Papers count NER splits in entity mentions and PICO in tagged words, not sentences, so
        comparing imported sizes with the paper needs the same unit.
        """
        units = {s.name: s.unit for s in self.spec.splits}
        schema = get_schema(self.spec.adapter.schema)
        return {name: schema.count(rows, units.get(name, "examples")) for name, rows in self.splits.items()}

    def longest_examples(self, n: int = 3) -> list[dict]:
        """The longest inputs (in characters or words), so users see what the engine must handle."""
        schema = get_schema(self.spec.adapter.schema)
        found = []
        for split, rows in self.splits.items():
            for row in rows:
                found.append({"split": split, "id": row["id"], "length": schema.length(row)})
        found.sort(key=lambda r: (-r["length"], r["split"], r["id"]))
        return found[:n]


def resolve_reader(path: str) -> Callable[..., Mapping[str, list[dict]]]:
    return resolve_implementation(path, "adapter reader")


def load_dataset_files(spec: DatasetSpec, directory: Path, *, contributed: bool = True) -> LoadedDataset:
    """Read ``directory`` with the dataset's adapter and validate every example.

    ``contributed``: the adapter's reader is the plugin's, so reading nothing is the plugin's
    fault (:func:`require_examples`); False where the platform's own reader reads the copy it
    exported, which the import already checked.
    """
    if spec.adapter is None:
        raise DataFormatError(directory, f"dataset {spec.slug!r} has no adapter to read files with")
    directory = Path(directory)
    if not directory.is_dir():
        raise DataFormatError(directory, "is not a directory")
    contribution = ("datasets", spec.slug) if contributed else None
    reader = resolve_implementation(spec.adapter.reader, f"dataset {spec.slug}: reader", contribution)
    splits = dict(reader(directory, **dict(spec.adapter.options)))
    if contributed:
        require_examples(spec, splits, directory)
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
    test_types = None
    if spec.adapter.test_types and contributed:
        read_types = resolve_implementation(spec.adapter.test_types, f"dataset {spec.slug}: test_types", contribution)
        test_types = read_types(directory, splits["test"])
    return LoadedDataset(spec, splits, label_set, fingerprint_of(splits), notes, test_types)


def require_examples(spec: DatasetSpec, splits: Mapping[str, list[dict]], directory: Path) -> None:
    """Raise :class:`ContractBreach` when the reader yielded nothing, or nothing for a split the dataset needs.

    A split the reader leaves out is not judged here: :func:`load_dataset_files` then calls a
    required one missing (the files' fault) and notes an optional one as absent. An optional split
    read empty is absent too (EU-ADR's dev cut from a train set too small to spare one).
    """
    if any(splits.values()):
        empty = [s for s in SPLIT_NAMES if s in splits and not splits[s] and s not in spec.adapter.optional_splits]
        if not empty:
            return
        conduct = f"yielded no {' or '.join(empty)} examples from {directory}"
    else:
        conduct = f"yielded no examples from {directory}"
    raise ContractBreach(f"dataset {spec.slug}: reader", conduct, ("datasets", spec.slug), spec.adapter.reader)


def load_canonical_files(spec: DatasetSpec, directory: Path) -> LoadedDataset:
    """Read ``directory/{train,dev,test}.jsonl``, the dataset already canonical, validated like its official files.

    This is how a worker receives a dataset from the platform: the platform exports the
    examples it imported, so the worker needs neither the official files nor their reader (and
    an empty file here is not the plugin's doing).
    """
    adapter = dataclasses.replace(spec.adapter, reader="biolm.canonical_jsonl:read_canonical_jsonl", options={})
    return load_dataset_files(dataclasses.replace(spec, adapter=adapter), directory, contributed=False)


def validate_examples(spec: DatasetSpec, splits: Mapping[str, list[dict]]) -> list[str]:
    """Check every example against its schema and the dataset's label set; return the labels seen.

    Strips the ``_where`` keys, so what remains is exactly the schema's fields.
    """
    adapter = spec.adapter
    schema = get_schema(adapter.schema)
    fields = set(schema.fields)
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
                    where, f"example has fields {sorted(row)}, expected {sorted(fields)} ({schema.name} schema)"
                )
            if row["id"] in ids:
                raise DataFormatError(
                    locate(where, field="id"), f"duplicate example id {row['id']!r} in the {split} split"
                )
            ids.add(row["id"])
            for label in schema.validate(row, where, adapter.multi_label):
                if allowed and label not in allowed:
                    raise DataFormatError(
                        schema.label_location(row, label, where),
                        f"unknown label {label!r}; expected one of {sorted(allowed)}",
                    )
                seen.add(label)
    return sorted(seen)


def fingerprint_of(splits: Mapping[str, list[dict]]) -> str:
    """A content hash of the canonical examples: equal data gives an equal fingerprint."""
    digest = hashlib.sha256()
    for split in sorted(splits):
        digest.update(split.encode())
        for row in splits[split]:
            digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
            digest.update(b"\n")
    return digest.hexdigest()[:16]
