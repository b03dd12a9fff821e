"""BLURB's EBM PICO splits built from the original EBM-NLP release (``ebm_nlp_2_00.tar.gz``).

BLURB distributes only split lists for EBM PICO (``{train,dev,test}_pmid.tsv``: one line of
comma-separated PMIDs); its data_generation step turns the EBM-NLP 2.0 release into the
``token<TAB>tag`` files. The train file is 4 MiB and was absent where ../shared/data was
collected, so a user with the release gets it from here, by the same procedure:

* the tokens of ``ebm_nlp_2_00/documents/<PMID>.tokens`` (white-space separated, as the corpus
  authors read them);
* the aggregated first-phase labels of each element, ``annotations/aggregated/starting_spans/
  {participants,interventions,outcomes}/<part>/<PMID>.AGGREGATED.ann`` (one 0/1 label per
  token), where ``<part>`` is ``train`` for BLURB's train and dev PMIDs and ``test/gold`` (the
  medical experts' labels) for its test PMIDs;
* a token's tag is ``I-PAR``, ``I-INT`` or ``I-OUT`` for the element that labels it, the later
  of participants, interventions, outcomes winning where they overlap, else ``O`` (IO tags, no
  ``B-``);
* each abstract starts with ``-DOCSTART- (<PMID>)`` and a blank line, and a blank line follows
  every ``.`` token, the only sentence boundary (an abstract that does not end with ``.`` runs
  straight into the next marker).

A test rebuilds BLURB's dev.tsv byte for byte from a release-format archive of its abstracts.
The release may be the ``.tar.gz`` itself or its extracted ``ebm_nlp_2_00/`` folder, next to
the split lists. ``python -m plugins.datasets.readers.ebm_nlp DIR`` writes the missing split
files into DIR; the reader builds them in memory when DIR holds only the release.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from biolm.dataset_io import DataFormatError, read_lines
from biolm.specs import SPLIT_NAMES, AdapterSpec
from plugins.datasets.readers.conll import read_conll_file, read_conll_lines, split_file

READER = "plugins.datasets.readers.ebm_nlp:read_ebm_pico"
ARCHIVE = "ebm_nlp_2_00.tar.gz"
ROOT = "ebm_nlp_2_00"
ELEMENTS = (("participants", "I-PAR"), ("interventions", "I-INT"), ("outcomes", "I-OUT"))
PARTS = {"train": ("train", "test/gold"), "dev": ("train", "test/gold"), "test": ("test/gold", "train")}
_SEPARATORS = re.compile(r"[\s,]+")


class Release:
    """The EBM-NLP 2.0 release, packed (``ebm_nlp_2_00.tar.gz``) or extracted (``ebm_nlp_2_00/``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._archive: tarfile.TarFile | None = None
        self._members: dict[str, tarfile.TarInfo] = {}
        if path.is_file():
            try:
                self._archive = tarfile.open(path, "r:gz")  # noqa: SIM115 - kept open until close()
                self._members = {m.name.removeprefix("./"): m for m in self._archive.getmembers() if m.isfile()}
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise DataFormatError(path, f"is not a readable gzipped tar archive: {exc}") from None

    @classmethod
    def find(cls, directory: Path) -> Release | None:
        for candidate in (directory / ARCHIVE, directory / ROOT):
            if candidate.exists():
                return cls(candidate)
        return None

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()

    def where(self, member: str) -> str:
        return f"{self.path}!{ROOT}/{member}" if self._archive else str(self.path / member)

    def read(self, member: str) -> str | None:
        """The text of ``ebm_nlp_2_00/<member>``, or None when the release has no such file."""
        if self._archive is None:
            path = self.path / member
            return path.read_text(encoding="utf-8") if path.is_file() else None
        info = self._members.get(f"{ROOT}/{member}")
        if info is None:
            return None
        stream = self._archive.extractfile(info)
        return stream.read().decode("utf-8") if stream is not None else None

    def tokens(self, pmid: str) -> list[str]:
        member = f"documents/{pmid}.tokens"
        text = self.read(member)
        if text is None:
            raise DataFormatError(self.path, f"has no {ROOT}/{member}: PMID {pmid} is not in this release")
        return text.lstrip("\ufeff").split()

    def labels(self, element: str, pmid: str, split: str, count: int) -> list[str] | None:
        """The element's 0/1 labels of the document, from the split's part first; None when unlabelled."""
        for part in PARTS[split]:
            for name in (f"{pmid}.AGGREGATED.ann", f"{pmid}_AGGREGATED.ann"):
                member = f"annotations/aggregated/starting_spans/{element}/{part}/{name}"
                text = self.read(member)
                if text is None:
                    continue
                labels = [value for value in _SEPARATORS.split(text.lstrip("\ufeff")) if value]
                if len(labels) != count:
                    raise DataFormatError(
                        self.where(member), f"has {len(labels)} labels for the {count} tokens of PMID {pmid}"
                    )
                return labels
        return None


def blurb_lines(release: Release, pmids: list[str], split: str) -> Iterator[str]:
    """The lines of BLURB's ``<split>.tsv`` for ``pmids``, without line ends."""
    for pmid in pmids:
        yield f"-DOCSTART- ({pmid})"
        yield ""
        tokens = release.tokens(pmid)
        tags = ["O"] * len(tokens)
        for element, tag in ELEMENTS:  # later elements overwrite earlier ones, as BLURB's files show
            labels = release.labels(element, pmid, split, len(tokens))
            for index, label in enumerate(labels or ()):
                if label != "0":
                    tags[index] = tag
        for token, tag in zip(tokens, tags, strict=True):
            yield f"{token}\t{tag}"
            if token == ".":
                yield ""


def read_pmids(path: Path) -> list[str]:
    """BLURB's split list: comma-separated PMIDs (on one line, though any layout is accepted)."""
    pmids: list[str] = []
    for line_no, line in read_lines(path):
        for value in line.split(","):
            value = value.strip()
            if not value:
                continue
            if not value.isdigit():
                raise DataFormatError(path, f"expected comma-separated PMIDs, found {value[:40]!r}", line_no)
            pmids.append(value)
    if not pmids:
        raise DataFormatError(path, "lists no PMIDs")
    return pmids


def read_ebm_pico(directory: Path) -> dict[str, list[dict]]:
    """BLURB's EBM PICO: each split's ``.tsv``, or where absent, built from the release and ``<split>_pmid.tsv``."""
    directory = Path(directory)
    release = Release.find(directory)
    splits: dict[str, list[dict]] = {}
    try:
        for split in SPLIT_NAMES:
            path = split_file(directory, split)
            if path is not None:
                splits[split] = read_conll_file(path, split, docstart="pmid")
                continue
            pmid_list = directory / f"{split}_pmid.tsv"
            if release is None or not pmid_list.is_file():
                if split == "train":
                    continue  # the adapter's optional split: reported as absent, with the way to build it
                raise DataFormatError(
                    directory, f"no {split}.tsv, and no {ARCHIVE} with {split}_pmid.tsv to build it from"
                )
            lines = enumerate(blurb_lines(release, read_pmids(pmid_list), split), start=1)
            examples = read_conll_lines(
                lines, f"{release.path} ({split} from {pmid_list.name})", split, docstart="pmid"
            )
            splits[split] = examples
    finally:
        if release is not None:
            release.close()
    return splits


def write_splits(directory: Path, release_path: Path | None = None) -> list[Path]:
    """Write each split file BLURB would have that ``directory`` lacks; the paths written."""
    release = Release(release_path) if release_path is not None else Release.find(directory)
    if release is None:
        raise DataFormatError(directory, f"no {ARCHIVE} (or extracted {ROOT}/) here; pass the release's path")
    written = []
    try:
        for split in SPLIT_NAMES:
            pmid_list = directory / f"{split}_pmid.tsv"
            if split_file(directory, split) is not None or not pmid_list.is_file():
                continue
            target = directory / f"{split}.tsv"
            handle, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
                    for line in blurb_lines(release, read_pmids(pmid_list), split):
                        stream.write(line + "\n")
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
            written.append(target)
    finally:
        release.close()
    return written


ADAPTERS: dict[str, AdapterSpec] = {
    # train is absent from ../shared/data (4 MiB files were not in the snapshots); the release builds it.
    "ebm-pico": AdapterSpec(
        schema="token-tagging", reader=READER, default_path="EBM-PICO/blurb", optional_splits=("train",)
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m plugins.datasets.readers.ebm_nlp",
        description="Write BLURB's EBM PICO split files (train.tsv, ...) from the EBM-NLP 2.0 release.",
    )
    parser.add_argument("directory", type=Path, help="The folder with BLURB's {train,dev,test}_pmid.tsv.")
    parser.add_argument("--release", type=Path, help=f"{ARCHIVE} or its extracted {ROOT}/ (default: in DIRECTORY).")
    args = parser.parse_args(argv)
    try:
        written = write_splits(args.directory, args.release)
    except (DataFormatError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"{args.directory}: every split with a PMID list already has its file; nothing written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
