"""Pretraining corpora, streamed: read documents one at a time and pass them through preprocessors.

A corpus is a UTF-8 text file (``.gz`` read transparently) with one document per line; blank
lines are skipped. Nothing here holds more than one document in memory, so a corpus larger
than RAM streams through as long as each preprocessor streams too (the contract of
:class:`~biolm.specs.PreprocessorSpec`: documents in, documents out, one at a time).

Errors name the file and line (bad UTF-8, a line over :data:`MAX_LINE_BYTES`), or the
preprocessor that broke its contract (it returned something that is not an iterable of strings).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from biolm.errors import DataFormatError
from biolm.specs import ImplementationError, PreprocessorSpec

MAX_LINE_BYTES = 16 * 1024 * 1024  # one document; a file without newlines must not be read whole


def read_documents(path: str | Path) -> Iterator[str]:
    """The documents of a corpus file, one per non-blank line, without the newline."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "corpus file not found" if not path.exists() else "is not a file")
    opener = gzip.open if path.suffix == ".gz" else open
    line_no = 0
    try:
        with opener(path, "rb") as handle:
            while True:
                raw = handle.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                line_no += 1
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    raise DataFormatError(
                        path, f"a line longer than {MAX_LINE_BYTES:,} bytes (one document per line)", line_no
                    )
                try:
                    text = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise DataFormatError(
                        path, f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})", line_no
                    ) from None
                if line_no == 1:
                    text = text.removeprefix("\ufeff")
                if text.strip():
                    yield text
    except (OSError, EOFError) as exc:
        raise DataFormatError(path, f"cannot be read: {exc}", line_no + 1) from exc


def apply_preprocessors(documents: Iterable[str], preprocessors: Sequence[PreprocessorSpec]) -> Iterator[str]:
    """``documents`` through each preprocessor in turn, lazily; a broken one is named."""
    stream: Iterable[str] = documents
    for spec in preprocessors:
        stream = _checked(spec, spec.resolve()(stream))
    yield from stream


def _checked(spec: PreprocessorSpec, produced: object) -> Iterator[str]:
    if isinstance(produced, str | bytes) or not isinstance(produced, Iterable):
        raise ImplementationError(
            f"preprocessor {spec.slug} returned {type(produced).__name__}; it must return an iterable of documents",
            ("preprocessors", spec.slug),
        )
    for document in produced:
        if not isinstance(document, str):
            raise ImplementationError(
                f"preprocessor {spec.slug} produced {type(document).__name__} {document!r:.60}; documents are strings",
                ("preprocessors", spec.slug),
            )
        yield document


def preprocess_corpus(path: str | Path, preprocessors: Sequence[PreprocessorSpec]) -> Iterator[str]:
    """The documents of the corpus at ``path`` after ``preprocessors``, streamed."""
    return apply_preprocessors(read_documents(path), preprocessors)
