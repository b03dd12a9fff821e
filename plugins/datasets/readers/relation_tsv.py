"""Masked-sentence relation TSVs (BLURB ChemProt, DDI, GAD; BioBERT EU-ADR) into the ``relation`` schema.

All four distributions give one row per candidate pair with both arguments already replaced by
placeholders ("dummified"): the model sees ``@CHEMICAL$`` and ``@GENE$``, never the entity
names. We keep that text exactly (DDI's trailing space included) and turn the placeholders into
the schema's character spans, so a head can mark them with typed markers or pool over them:

* ChemProt: ``@CHEMICAL$`` is the head and ``@GENE$`` the tail, whatever their order (about
  45% of rows have the gene first). When the two mentions overlap the BLURB preprocessor
  writes a single ``@CHEM-GENE$``; head and tail are then that same span, typed CHEMICAL and
  GENE, so the argument types survive the merge.
* DDI: both drugs are ``@DRUG$``; the first is the head, the second the tail (DDI relations are
  symmetric, and the file has one row per unordered pair). ``@DRUG-DRUG$`` is the overlap case.
* GAD and EU-ADR: ``@GENE$`` is the head and ``@DISEASE$`` the tail; there is no overlap case.

A row with missing, repeated or foreign placeholders is a DataFormatError naming file, line,
what was expected and what was found: it means the file is not the masked distribution.

Layouts differ: BLURB ChemProt/DDI have ``pair_id<TAB>sentence<TAB>label`` without a header
(DDI's train is gzipped, ``train.tsv.gz``); BLURB GAD and BioBERT's test files have the header
``index<TAB>sentence<TAB>label``; BioBERT's train files have no header and no id
(``sentence<TAB>label``), so their ids are ``train-<row>``, counted from 0 in file order.

EU-ADR has no dev split in BioBERT's distribution (its dev.tsv files are empty): BioBERT and
Bioformer train on a fold's train.tsv and report test. We read one fold (option ``fold``, default
1, of the 10 cross-validation folds in ``<directory>/<fold>/``) and, so the platform's usual
train/dev/test protocol applies, hold out the LAST ``dev_fraction`` (default 0.1, rounded half
up) of that fold's train rows as dev, in file order, which is deterministic and, since
BioBERT's train files are shuffled, not label-sorted. Fold 1 gives train 286 / dev 32 / test 37
rows. ``dev_fraction=0`` gives BioBERT's own train 318 / test 37 with no dev (hence dev is an
optional split of the adapter).

GAD and EU-ADR also declare their 10-fold distribution (``cross_validation``): the protocol of
Lewis et al. 2020 reads every fold as BioBERT ships it (``<root>/<k>/{train,test}.tsv``), and a copy of
a single fold as ``<root>-fold<k>/`` (GAD's ``biobert-REdata-fold1`` under ../shared/data) is
found as that fold, so the missing ones can be named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_tsv
from biolm.schemas.relation import PLACEHOLDER
from biolm.specs import AdapterSpec, CrossValidationSpec
from plugins.datasets.readers.sentence_common import split_files

READER = "plugins.datasets.readers.relation_tsv"
INDEX_HEADER = ("index", "sentence", "label")


@dataclass(frozen=True)
class Masks:
    """The placeholders of one dataset and the entity type each stands for."""

    head: str
    head_type: str
    tail: str
    tail_type: str
    merged: str | None = None  # the single placeholder written when the two mentions overlap

    def describe(self) -> str:
        pair = f"{self.head} twice" if self.head == self.tail else f"{self.head} and {self.tail} once each"
        return f"the placeholders {pair}" + (f", or a single {self.merged}" if self.merged else "")


CHEMPROT_MASKS = Masks("@CHEMICAL$", "CHEMICAL", "@GENE$", "GENE", "@CHEM-GENE$")
DDI_MASKS = Masks("@DRUG$", "DRUG", "@DRUG$", "DRUG", "@DRUG-DRUG$")
GENE_DISEASE_MASKS = Masks("@GENE$", "GENE", "@DISEASE$", "DISEASE")


def locate_placeholders(sentence: str, masks: Masks, path: Path, line: int) -> tuple[dict, dict]:
    """The head and tail spans ``{"start", "end", "type"}`` of the placeholders in ``sentence``."""
    found = [(m.group(), m.start(), m.end()) for m in PLACEHOLDER.finditer(sentence)]
    names = [name for name, _, _ in found]
    head = tail = None
    if masks.merged is not None and names == [masks.merged]:
        head = tail = found[0]
    elif masks.head == masks.tail and names == [masks.head, masks.head]:
        head, tail = found
    elif masks.head != masks.tail and sorted(names) == sorted([masks.head, masks.tail]):
        head = found[names.index(masks.head)]
        tail = found[names.index(masks.tail)]
    if head is None or tail is None:
        seen = ", ".join(names) if names else "none"
        raise DataFormatError(path, f"expected {masks.describe()} in the sentence; found {seen}", line)
    return (
        {"start": head[1], "end": head[2], "type": masks.head_type},
        {"start": tail[1], "end": tail[2], "type": masks.tail_type},
    )


def read_masked_tsv(path: Path, masks: Masks, layout: str) -> list[dict]:
    """Rows of one file; ``layout`` is ``id-sentence-label``, ``index-header`` or ``sentence-label``."""
    if layout == "id-sentence-label":
        rows = read_tsv(path, 3)
    elif layout == "index-header":
        rows = read_tsv(path, 3, header=INDEX_HEADER)
    elif layout == "sentence-label":
        rows = read_tsv(path, 2)
    else:
        raise ValueError(f"unknown layout {layout!r}")
    examples = []
    for line, fields in rows:
        if layout == "sentence-label":
            example_id, (sentence, label) = f"{path.name.split('.')[0]}-{len(examples)}", fields
        else:
            example_id, sentence, label = fields
        head, tail = locate_placeholders(sentence, masks, path, line)
        examples.append(
            {"id": example_id, "text": sentence, "head": head, "tail": tail, "label": label, "_where": f"{path}:{line}"}
        )
    return examples


def read_chemprot(directory: Path) -> dict[str, list[dict]]:
    """BLURB ChemProt: ``{train,dev,test}.tsv``, ``pair_id<TAB>sentence<TAB>label``, no header."""
    files = split_files(directory, {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)})
    return {split: read_masked_tsv(path, CHEMPROT_MASKS, "id-sentence-label") for split, path in files.items()}


def read_ddi(directory: Path) -> dict[str, list[dict]]:
    """BLURB DDI: as ChemProt, with the train file usually gzipped (``train.tsv.gz``)."""
    candidates = {"train": ("train.tsv.gz", "train.tsv"), "dev": ("dev.tsv",), "test": ("test.tsv",)}
    files = split_files(directory, candidates)
    return {split: read_masked_tsv(path, DDI_MASKS, "id-sentence-label") for split, path in files.items()}


def read_gad(directory: Path) -> dict[str, list[dict]]:
    """BLURB GAD: ``{train,dev,test}.tsv`` with the header ``index<TAB>sentence<TAB>label``."""
    files = split_files(directory, {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)})
    return {split: read_masked_tsv(path, GENE_DISEASE_MASKS, "index-header") for split, path in files.items()}


def read_biobert_fold(directory: Path, fold: int = 1, dev_fraction: float = 0.1) -> dict[str, list[dict]]:
    """One fold of BioBERT's cross-validated RE data (EU-ADR), with dev cut from the end of train.

    ``directory`` holds the fold folders ``1`` ... ``10``; a directory that directly holds
    ``train.tsv`` and ``test.tsv`` (one fold copied on its own) is read as that fold.
    """
    if not 0 <= dev_fraction < 1:
        raise ValueError(f"dev_fraction must be in [0, 1), got {dev_fraction!r}")
    fold_dir = directory / str(fold)
    if not fold_dir.is_dir():
        if not (directory / "train.tsv").is_file():
            raise DataFormatError(directory, f"no fold folder {fold!s}/ and no train.tsv: not BioBERT RE data")
        fold_dir = directory
    splits = read_fold_files(fold_dir)
    train = splits["train"]
    n_dev = int(len(train) * dev_fraction + 0.5)
    cut = len(train) - n_dev
    return {"train": train[:cut], "dev": train[cut:], "test": splits["test"]}


def read_fold_files(directory: Path) -> dict[str, list[dict]]:
    """A BioBERT fold directory as it is: ``train.tsv`` (no header) and ``test.tsv`` (with one)."""
    files = split_files(directory, {"train": ("train.tsv",), "test": ("test.tsv",)})
    return {
        "train": read_masked_tsv(files["train"], GENE_DISEASE_MASKS, "sentence-label"),
        "test": read_masked_tsv(files["test"], GENE_DISEASE_MASKS, "index-header"),
    }


def biobert_folds(directory: Path, folds: int) -> dict[int, Path]:
    """The fold directories present: ``<directory>/<k>/`` as BioBERT ships them, or ``<directory>-fold<k>/``.

    The second form is how a single fold is often copied on its own (BLURB takes GAD's fold 1
    this way), so a partial copy is recognised as such and its missing folds can be named.
    """
    found = {}
    for fold in range(1, folds + 1):
        for candidate in (directory / str(fold), directory.with_name(f"{directory.name}-fold{fold}")):
            if (candidate / "train.tsv").is_file():
                found[fold] = candidate
                break
    return found


def _ten_folds(root: str) -> CrossValidationSpec:
    return CrossValidationSpec(
        folds=10, locate=f"{READER}:biobert_folds", reader=f"{READER}:read_fold_files", default_path=root
    )


ADAPTERS: dict[str, AdapterSpec] = {
    "chemprot": AdapterSpec(schema="relation", reader=f"{READER}:read_chemprot", default_path="ChemProt/blurb"),
    "ddi": AdapterSpec(schema="relation", reader=f"{READER}:read_ddi", default_path="DDI/blurb"),
    "gad": AdapterSpec(
        schema="relation",
        reader=f"{READER}:read_gad",
        default_path="GAD/blurb",
        cross_validation=_ten_folds("GAD/biobert-REdata"),
    ),
    "eu-adr": AdapterSpec(
        schema="relation",
        reader=f"{READER}:read_biobert_fold",
        options={"fold": 1, "dev_fraction": 0.1},
        default_path="EU-ADR/biobert-REdata",
        optional_splits=("dev",),
        cross_validation=_ten_folds("EU-ADR/biobert-REdata"),
    ),
}
