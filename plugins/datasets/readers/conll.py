"""Token-tagging datasets distributed as CoNLL-style ``token<TAB>tag`` files.

Every NER and PICO distribution we use has the same shape: one token per line, a tab, its
tag; a blank line between sentences; one file per split. They differ only in three ways,
which are options of the single reader :func:`read_conll` instead of near-copies of it:

* **file names** -- BLURB writes ``dev.tsv``, Crichton et al. and BioBERT write
  ``devel.tsv``; both are looked for (a ``.gz`` of either too), and finding both is an error
  rather than a silent choice.
* **document markers** (``docstart``) -- the BLURB JNLPBA and EBM PICO files start every
  abstract with ``-DOCSTART- <PMID>`` (JNLPBA) or ``-DOCSTART- (<PMID>)`` (EBM PICO) and a
  blank line. With ``docstart="pmid"`` that PMID becomes the ``document_id`` of the sentences
  that follow and the marker line is not a sentence; a marker also ends a sentence, because
  17 EBM PICO dev abstracts do not end with a blank line. The other distributions have no
  markers (``docstart="none"``, where a marker line is an error), so each sentence is its own
  document: ``document_id`` is the sentence's ``id``. Sentence ids are ``<split>-<index>``, not
  PMID-based, because the JNLPBA files repeat three abstracts under the same PMID (train
  97218353; test 98282479 and 98281994), each time with slightly different tokens.
* **entity types in tags** (``collapse_types``) -- Crichton et al.'s files type their tags
  (``B-Chemical``), BLURB and BioBERT strip the type (``B``), which loses nothing when a
  corpus has one type. BC4CHEMD is catalogued with untyped ``B``/``I``/``O`` as BioBERT and
  Bioformer used it, so its adapter collapses Crichton's typed tags; a second entity type in
  a file is an error, because merging types would change the task. LINNAEUS keeps
  Crichton's ``B-Species``/``I-Species``, which is what the catalogue lists.

* **typed test gold** (:func:`read_crichton_test_types`) -- BLURB's JNLPBA merges GENIA's five
  types into ``B``/``I``; Crichton et al.'s ``test.tsv`` has the same tokens with the types.
  When that file lies beside BLURB's (``crichton-IOB/test.tsv`` next to ``blurb/``), the import
  keeps its tags by example id, checked token by token against BLURB's test split, so the
  pages can tell each type's recall; the examples and their fingerprint stay BLURB's.

Splits that a distribution lacks are named in ``optional_splits`` (both the adapter's and the
reader's option, so a missing required file is reported with the names looked for):

* EBM PICO (read by :mod:`plugins.datasets.readers.ebm_nlp` with this module's parser) has no
  train file under ../shared/data: it is built from the EBM-NLP release by BLURB's procedure.

Content checks (tags in the label set, one tag per token, no white space in tokens) are left
to :func:`biolm.dataset_io.validate_examples`; this module only raises
:class:`~biolm.dataset_io.DataFormatError` for what is wrong with the file's syntax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.errors import Where
from biolm.specs import SPLIT_NAMES, AdapterSpec

READER = "plugins.datasets.readers.conll:read_conll"
CRICHTON_TEST_TYPES = "plugins.datasets.readers.conll:read_crichton_test_types"
TYPED_TEST_FILE = ("crichton-IOB", "test.tsv")  # beside the BLURB directory: ../crichton-IOB/test.tsv

SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.tsv", "train.tsv.gz"),
    "dev": ("dev.tsv", "dev.tsv.gz", "devel.tsv", "devel.tsv.gz"),
    "test": ("test.tsv", "test.tsv.gz"),
}
DOCSTART_MODES = ("none", "pmid")

_DOCSTART = "-DOCSTART-"
_DOCSTART_PMID = re.compile(r"^-DOCSTART- (?:(\d+)|\((\d+)\))$")
_TYPED_TAG = re.compile(r"^([BI])-(.+)$")


def read_conll(
    directory: Path,
    *,
    docstart: str = "none",
    collapse_types: bool = False,
    optional_splits: Sequence[str] = (),
) -> dict[str, list[dict]]:
    """Read ``train``/``dev``/``test`` ``token<TAB>tag`` files into token-tagging examples.

    ``docstart``: ``"none"`` (no ``-DOCSTART-`` lines allowed) or ``"pmid"`` (every document
    starts with ``-DOCSTART- <PMID>`` or ``-DOCSTART- (<PMID>)``). ``collapse_types`` turns
    ``B-Type``/``I-Type`` into ``B``/``I`` for single-type corpora. A split in
    ``optional_splits`` may have no file; any other missing file is an error.
    """
    if docstart not in DOCSTART_MODES:
        raise ValueError(f"docstart must be one of {DOCSTART_MODES}, got {docstart!r}")
    directory = Path(directory)
    splits: dict[str, list[dict]] = {}
    for split in SPLIT_NAMES:
        path = split_file(directory, split)
        if path is None:
            if split in optional_splits:
                continue
            looked_for = ", ".join(SPLIT_FILES[split])
            raise DataFormatError(directory, f"no file for the {split} split; looked for {looked_for}")
        splits[split] = read_conll_file(path, split, docstart=docstart, collapse_types=collapse_types)
    return splits


def split_file(directory: Path, split: str) -> Path | None:
    """The one file of ``split`` in ``directory``; two candidates at once are an error."""
    found = [directory / name for name in SPLIT_FILES[split] if (directory / name).is_file()]
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        raise DataFormatError(directory, f"found both {names} for the {split} split; expected exactly one")
    return found[0] if found else None


def read_conll_file(path: Path, split: str, *, docstart: str = "none", collapse_types: bool = False) -> list[dict]:
    """The sentences of one ``token<TAB>tag`` file; ``_where`` is the first line and each token's line."""
    return read_conll_lines(read_lines(path), path, split, docstart=docstart, collapse_types=collapse_types)


def read_conll_lines(
    lines: Iterable[tuple[int, str]],
    path: Path | str,
    split: str,
    *,
    docstart: str = "none",
    collapse_types: bool = False,
) -> list[dict]:
    """Sentences from numbered ``token<TAB>tag`` lines; ``path`` names their source in errors and ``_where``."""
    examples: list[dict] = []
    tokens: list[str] = []
    tags: list[str] = []
    token_lines: list[str] = []
    start = 0
    document: str | None = None
    entity_type: tuple[str, int] | None = None  # (type, line) of the first typed tag, for collapse_types

    def end_sentence() -> None:
        if not tokens:
            return
        sentence_id = f"{split}-{len(examples)}"
        examples.append(
            {
                "id": sentence_id,
                "document_id": document if document is not None else sentence_id,
                "tokens": list(tokens),
                "tags": list(tags),
                "_where": Where(f"{path}:{start}", items=list(token_lines)),
            }
        )
        tokens.clear()
        tags.clear()
        token_lines.clear()

    for line_no, line in lines:
        if line.startswith(_DOCSTART):
            end_sentence()
            document = _document_id(path, line, line_no, docstart)
            continue
        if not line.strip():
            end_sentence()
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataFormatError(
                path, f"expected 2 tab-separated columns (token<TAB>tag), found {len(fields)}: {line[:80]!r}", line_no
            )
        token, tag = fields
        if not token or not tag:
            empty = "token" if not token else "tag"
            raise DataFormatError(path, f"expected token<TAB>tag, found an empty {empty}: {line[:80]!r}", line_no)
        if docstart == "pmid" and document is None:
            raise DataFormatError(path, "expected a '-DOCSTART- <PMID>' line before the first sentence", line_no)
        if collapse_types:
            tag, entity_type = _collapse(path, tag, line_no, entity_type)
        if not tokens:
            start = line_no
        tokens.append(token)
        tags.append(tag)
        token_lines.append(f"{path}:{line_no}")
    end_sentence()
    if not examples:
        raise DataFormatError(path, "has no sentences; expected token<TAB>tag lines, a blank line between sentences")
    return examples


def _document_id(path: Path, line: str, line_no: int, docstart: str) -> str:
    if docstart == "none":
        raise DataFormatError(
            path, "unexpected -DOCSTART- line: this distribution has no document markers (docstart='none')", line_no
        )
    match = _DOCSTART_PMID.match(line.rstrip())
    if match is None:
        raise DataFormatError(
            path, f"expected '-DOCSTART- <PMID>' or '-DOCSTART- (<PMID>)', found {line[:80]!r}", line_no
        )
    return match.group(1) or match.group(2)


def _collapse(path: Path, tag: str, line_no: int, seen: tuple[str, int] | None) -> tuple[str, tuple[str, int] | None]:
    match = _TYPED_TAG.match(tag)
    if match is None:
        return tag, seen
    prefix, entity_type = match.groups()
    if seen is None:
        return prefix, (entity_type, line_no)
    if entity_type != seen[0]:
        raise DataFormatError(
            path,
            f"found entity type {entity_type!r} after {seen[0]!r} (line {seen[1]}); collapsing B-/I- tags to "
            "untyped B/I expects a single entity type",
            line_no,
        )
    return prefix, seen


def read_crichton_test_types(directory: Path, test_rows: Sequence[dict]) -> dict[str, list[str]] | None:
    """``{test example id: typed tags}`` from Crichton et al.'s typed ``test.tsv`` beside ``directory``; None if absent.

    The typed file must hold exactly the test split's tokens, in order, each with the same tag
    once its type is dropped (``B-protein`` is BLURB's ``B``); its ``-DOCSTART-`` and blank
    lines are skipped, since the sentences are BLURB's. Anything else is refused with the file,
    the line and what was expected there.
    """
    path = Path(directory).parent.joinpath(*TYPED_TEST_FILE)
    if not path.is_file():
        return None
    lines = ((n, line) for n, line in read_lines(path) if line.strip() and not line.startswith(_DOCSTART))
    types: dict[str, list[str]] = {}
    for row in test_rows:
        typed = types[row["id"]] = []
        for position, (token, tag) in enumerate(zip(row["tokens"], row["tags"], strict=True)):
            expected = f"token {token!r} tagged {tag} (test example {row['id']}, word {position})"
            line_no, line = next(lines, (None, ""))
            if line_no is None:
                raise DataFormatError(path, f"ends early: expected {expected}")
            fields = line.split("\t")
            found_tag = fields[1] if len(fields) == 2 else ""
            if fields[0] != token or _TYPED_TAG.sub(r"\1", found_tag) != tag:
                raise DataFormatError(path, f"expected {expected}, found {line[:80]!r}", line_no)
            typed.append(found_tag)
    extra = next(lines, None)
    if extra is not None:
        raise DataFormatError(path, f"has tokens after the test split's last: {extra[1][:80]!r}", extra[0])
    return types


def _adapter(
    default_path: str,
    *,
    docstart: str = "none",
    collapse_types: bool = False,
    optional_splits: tuple[str, ...] = (),
    test_types: str = "",
) -> AdapterSpec:
    options: dict[str, object] = {}
    if docstart != "none":
        options["docstart"] = docstart
    if collapse_types:
        options["collapse_types"] = True
    if optional_splits:
        options["optional_splits"] = list(optional_splits)
    return AdapterSpec(
        schema="token-tagging",
        reader=READER,
        options=options,
        default_path=default_path,
        optional_splits=optional_splits,
        test_types=test_types,
    )


ADAPTERS: dict[str, AdapterSpec] = {
    "bc5-chem": _adapter("BC5-chem/blurb"),
    "bc5-disease": _adapter("BC5-disease/blurb"),
    "ncbi-disease": _adapter("NCBI-disease/blurb"),
    "bc2gm": _adapter("BC2GM/blurb"),
    # BLURB's untyped B/I/O; GENIA's five types kept aside from Crichton's typed test.tsv when it is there
    "jnlpba": _adapter("JNLPBA/blurb", docstart="pmid", test_types=CRICHTON_TEST_TYPES),
    "linnaeus": _adapter("LINNAEUS/crichton-IOB"),
    "s800": _adapter("S800/biobert-NER"),
    # Crichton et al.'s typed B-Chemical/I-Chemical collapsed to the catalogue's B/I/O; also reads BioBERT's copy.
    "bc4chemd": _adapter("BC4CHEMD/crichton-IOB", collapse_types=True),
}
