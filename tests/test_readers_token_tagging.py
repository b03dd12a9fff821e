"""The token-tagging readers (plugins/datasets/readers/conll.py) on the real files and on broken ones.

Expected counts are those of the official data folder's README.md (BIOLM_DATA_DIR; "mentions" = B tags; EBM PICO counts
non-O tokens). Each real dataset is parsed once per module, because the big files take seconds.
Malformed-input tests write small files to tmp_path and check that the error names the file,
the line and what was expected.
"""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pytest

from biolm.dataset_io import DataFormatError, LoadedDataset, load_dataset_files
from biolm.specs import DatasetSpec
from plugins.datasets import biomedical, blurb
from plugins.datasets.readers import all_adapters

FIXTURES = Path(__file__).parent / "fixtures" / "token_tagging"
SPECS: dict[str, DatasetSpec] = {s.slug: s for s in (*blurb.DATASETS, *biomedical.DATASETS)}

# slug -> split -> (sentences, mentions); mentions are B tags (B-Species for LINNAEUS).
NER_COUNTS = {
    "bc5-chem": {"train": (4560, 5203), "dev": (4581, 5347), "test": (4797, 5385)},
    "bc5-disease": {"train": (4560, 4182), "dev": (4581, 4246), "test": (4797, 4424)},
    "ncbi-disease": {"train": (5424, 5134), "dev": (923, 787), "test": (940, 960)},
    "bc2gm": {"train": (12574, 15197), "dev": (2519, 3061), "test": (5038, 6325)},
    "jnlpba": {"train": (16807, 46750), "dev": (1739, 4551), "test": (3856, 8662)},
    "linnaeus": {"train": (11935, 2119), "dev": (4078, 711), "test": (7142, 1433)},
    "s800": {"train": (5733, 2557), "dev": (830, 384), "test": (1630, 767)},
}
# split -> (documents, sentences, tokens, non-O tokens)
PICO_COUNTS = {"dev": (960, 10386, 262268, 87308), "test": (191, 2076, 51784, 16364)}
REAL_SLUGS = [*NER_COUNTS, "ebm-pico"]
ADAPTERS = all_adapters()


def spec_for(slug: str) -> DatasetSpec:
    return dataclasses.replace(SPECS[slug], adapter=ADAPTERS[slug])


@pytest.fixture(scope="module")
def real(official_data):
    """``real(slug)`` -> the LoadedDataset of the official files, parsed once per module (skips if absent)."""
    cache: dict[str, LoadedDataset] = {}

    def load(slug: str) -> LoadedDataset:
        if slug not in cache:
            cache[slug] = load_dataset_files(spec_for(slug), official_data(ADAPTERS[slug].default_path))
        return cache[slug]

    return load


def mentions(rows: list[dict]) -> int:
    return sum(tag.startswith("B") for row in rows for tag in row["tags"])


def document_runs(rows: list[dict]) -> list[str]:
    """The document_id of each run of consecutive sentences (JNLPBA repeats some PMIDs far apart)."""
    return [
        row["document_id"] for i, row in enumerate(rows) if i == 0 or row["document_id"] != rows[i - 1]["document_id"]
    ]


def documents(rows: list[dict]) -> int:
    return len(document_runs(rows))


# --- the real files -----------------------------------------------------------------------------


@pytest.mark.parametrize("slug", list(NER_COUNTS))
def test_ner_dataset_loads_with_the_data_readme_sentence_and_mention_counts(real, slug):
    loaded = real(slug)
    measured = {split: (len(rows), mentions(rows)) for split, rows in loaded.splits.items()}
    assert measured == NER_COUNTS[slug]


@pytest.mark.parametrize("slug", REAL_SLUGS)
def test_files_use_exactly_the_catalogue_label_set(real, slug):
    assert real(slug).label_set == sorted(SPECS[slug].labels)


def test_ebm_pico_loads_dev_and_test_with_the_data_readme_counts_and_no_train(real):
    loaded = real("ebm-pico")
    measured = {
        split: (
            documents(rows),
            len(rows),
            sum(len(row["tokens"]) for row in rows),
            sum(tag != "O" for row in rows for tag in row["tags"]),
        )
        for split, rows in loaded.splits.items()
    }
    assert measured == PICO_COUNTS
    assert loaded.notes == ["train split absent from this distribution"]


def test_ebm_pico_document_ids_are_the_blurb_pmid_lists_in_order(real, official_data):
    loaded = real("ebm-pico")
    for split, rows in loaded.splits.items():
        listed = official_data("EBM-PICO", "blurb", f"{split}_pmid.tsv").read_text().strip().split(",")
        assert list(dict.fromkeys(row["document_id"] for row in rows)) == listed


def test_jnlpba_sentences_carry_the_pmid_of_their_docstart_line(real):
    loaded = real("jnlpba")
    assert {split: documents(rows) for split, rows in loaded.splits.items()} == {"train": 1800, "dev": 200, "test": 404}
    first = loaded.splits["train"][0]
    assert first["document_id"] == "95369245"
    assert first["tokens"][:3] == ["IL-2", "gene", "expression"]
    assert not any(
        token.startswith("-DOCSTART-") for rows in loaded.splits.values() for r in rows for token in r["tokens"]
    )


def test_jnlpba_has_three_abstracts_twice_under_their_pmid_and_ids_stay_unique(real):
    loaded = real("jnlpba")
    repeated = {}
    for split, rows in loaded.splits.items():
        runs = document_runs(rows)
        repeated[split] = sorted({pmid for pmid in runs if runs.count(pmid) > 1})
        assert len({row["id"] for row in rows}) == len(rows)
    assert repeated == {"train": ["97218353"], "dev": [], "test": ["98281994", "98282479"]}


def test_sentences_without_document_markers_are_their_own_documents(real):
    row = real("ncbi-disease").splits["test"][0]
    assert row["id"] == "test-0"
    assert row["document_id"] == row["id"]


@pytest.mark.parametrize("slug", REAL_SLUGS)
def test_catalogue_split_sizes_match_the_files_except_the_documented_paper_figures(real, slug):
    """BLURB Table 3 says 4,244 BC5-disease dev mentions and 85,321 EBM PICO dev elements; the files differ."""
    loaded = real(slug)
    documented = {("bc5-disease", "dev"): (4244, 4246), ("ebm-pico", "dev"): (85321, 87308)}
    for split in SPECS[slug].splits:
        if split.name not in loaded.splits:
            continue
        rows = loaded.splits[split.name]
        count = mentions(rows) if split.unit == "mentions" else sum(t != "O" for r in rows for t in r["tags"])
        expected = documented.get((slug, split.name), (split.size, split.size))
        assert (split.size, count) == expected, (slug, split.name)


def test_bc4chemd_real_files_load_when_present(official_data):
    # Every BC4CHEMD copy is >= 4 MiB and was not in the data snapshots (the official data folder's README,
    # 'Not found'): this skips there, and the adapter is tested on tests/fixtures/token_tagging/bc4chemd.
    directory = official_data(ADAPTERS["bc4chemd"].default_path)
    loaded = load_dataset_files(spec_for("bc4chemd"), directory)
    assert loaded.label_set == ["B", "I", "O"]


# --- BC4CHEMD on a fixture in Crichton et al.'s format --------------------------------------------


def test_bc4chemd_adapter_reads_crichton_typed_tags_as_the_catalogue_untyped_tags():
    loaded = load_dataset_files(spec_for("bc4chemd"), FIXTURES / "bc4chemd")
    assert {split: (len(rows), mentions(rows)) for split, rows in loaded.splits.items()} == {
        "train": (3, 4),
        "dev": (2, 3),
        "test": (2, 2),
    }
    assert loaded.label_set == ["B", "I", "O"]
    assert loaded.splits["dev"][1]["tags"][-3:] == ["B", "I", "O"]


def test_collapsing_types_refuses_a_second_entity_type(tmp_path):
    write_splits(tmp_path, train="aspirin\tB-Chemical\n\nTP53\tB-Gene\n")
    with pytest.raises(DataFormatError) as caught:
        load_dataset_files(spec_for("bc4chemd"), tmp_path)
    message = str(caught.value)
    assert f"{tmp_path / 'train.tsv'}:3:" in message
    assert "'Gene' after 'Chemical' (line 1)" in message
    assert "single entity type" in message


# --- malformed input ----------------------------------------------------------------------------

GOOD = "Aspirin\tB\nhelps\tO\n.\tO\n\nNo\tO\nmention\tO\n\n"
PICO_GOOD = "-DOCSTART- (111)\n\nAspirin\tI-INT\nhelps\tO\n.\tO\n\n"


def write_splits(directory: Path, **files: str) -> None:
    """train.tsv, dev.tsv and test.tsv with GOOD, overridden by ``files`` (name -> content)."""
    contents = {"train": GOOD, "dev": GOOD, "test": GOOD, **files}
    for split, text in contents.items():
        (directory / f"{split}.tsv").write_text(text, encoding="utf-8")


def load_error(slug: str, directory: Path) -> str:
    with pytest.raises(DataFormatError) as caught:
        load_dataset_files(spec_for(slug), directory)
    return str(caught.value)


def test_a_line_with_three_columns_is_reported_with_file_and_line(tmp_path):
    write_splits(tmp_path, dev="Aspirin\tB\nhelps\tO\textra\n\n")
    message = load_error("ncbi-disease", tmp_path)
    assert f"{tmp_path / 'dev.tsv'}:2:" in message
    assert "expected 2 tab-separated columns (token<TAB>tag), found 3" in message


def test_a_line_without_a_tab_is_reported_with_file_and_line(tmp_path):
    write_splits(tmp_path, test="Aspirin\tB\n\nhelps O\n\n")
    message = load_error("ncbi-disease", tmp_path)
    assert f"{tmp_path / 'test.tsv'}:3:" in message
    assert "expected 2 tab-separated columns (token<TAB>tag), found 1" in message


def test_an_empty_tag_is_reported_with_file_and_line(tmp_path):
    write_splits(tmp_path, train="Aspirin\t\n\n")
    message = load_error("ncbi-disease", tmp_path)
    assert f"{tmp_path / 'train.tsv'}:1:" in message
    assert "expected token<TAB>tag, found an empty tag" in message


def test_a_tag_outside_the_label_set_is_reported_at_its_sentence(tmp_path):
    """Validation (not the reader) checks labels, and locates the sentence by its first line."""
    write_splits(tmp_path, train=GOOD + "Parkinson\tB-Disease\ndisease\tI\n\n")
    message = load_error("ncbi-disease", tmp_path)
    assert f"{tmp_path / 'train.tsv'}:8:" in message
    assert "unknown label 'B-Disease'; expected one of ['B', 'I', 'O']" in message


def test_a_missing_split_file_names_the_files_looked_for(tmp_path):
    write_splits(tmp_path)
    (tmp_path / "dev.tsv").unlink()
    message = load_error("s800", tmp_path)
    assert str(tmp_path) in message
    assert "no file for the dev split; looked for dev.tsv, dev.tsv.gz, devel.tsv, devel.tsv.gz" in message


def test_a_missing_optional_train_split_is_recorded_as_absent(tmp_path):
    write_splits(tmp_path, dev=PICO_GOOD, test=PICO_GOOD)
    (tmp_path / "train.tsv").unlink()
    loaded = load_dataset_files(spec_for("ebm-pico"), tmp_path)
    assert set(loaded.splits) == {"dev", "test"}
    assert loaded.notes == ["train split absent from this distribution"]


def test_dev_and_devel_files_together_are_ambiguous(tmp_path):
    write_splits(tmp_path)
    (tmp_path / "devel.tsv").write_text(GOOD, encoding="utf-8")
    message = load_error("linnaeus", tmp_path)
    assert "found both dev.tsv and devel.tsv for the dev split; expected exactly one" in message


def test_an_empty_file_is_reported_with_its_name(tmp_path):
    """An empty file has no line to point at; the message names the file."""
    write_splits(tmp_path, test="")
    message = load_error("bc2gm", tmp_path)
    assert f"{tmp_path / 'test.tsv'}: file is empty" in message


def test_a_file_of_blank_lines_has_no_sentences(tmp_path):
    write_splits(tmp_path, test="\n\n\n")
    message = load_error("bc2gm", tmp_path)
    assert f"{tmp_path / 'test.tsv'}: has no sentences; expected token<TAB>tag lines" in message


@pytest.mark.parametrize("filler_lines", [0, 2000], ids=["near-the-start", "past-the-first-8-KiB"])
def test_bad_utf8_bytes_are_reported_at_their_line(tmp_path, filler_lines):
    filler = "word\tO\n" * filler_lines
    write_splits(tmp_path)
    (tmp_path / "dev.tsv").write_bytes((GOOD + filler).encode() + b"caf\xe9\tO\n\n")
    message = load_error("bc5-chem", tmp_path)
    assert f"{tmp_path / 'dev.tsv'}:{8 + filler_lines}:" in message
    assert "not UTF-8 text (invalid continuation byte at byte 4 of the line)" in message


def test_gzipped_split_files_are_read(tmp_path):
    write_splits(tmp_path)
    (tmp_path / "train.tsv").unlink()
    with gzip.open(tmp_path / "train.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write(GOOD + "Ibuprofen\tB\n\n")
    loaded = load_dataset_files(spec_for("bc5-chem"), tmp_path)
    assert [row["tokens"] for row in loaded.splits["train"]] == [
        ["Aspirin", "helps", "."],
        ["No", "mention"],
        ["Ibuprofen"],
    ]


def test_a_truncated_gzip_file_is_reported_with_its_name(tmp_path):
    write_splits(tmp_path)
    (tmp_path / "train.tsv").unlink()
    data = gzip.compress((GOOD * 50).encode())
    (tmp_path / "train.tsv.gz").write_bytes(data[: len(data) // 2])
    message = load_error("bc5-chem", tmp_path)
    assert str(tmp_path / "train.tsv.gz") in message
    assert "cannot be read" in message


def test_a_docstart_line_without_a_pmid_is_reported(tmp_path):
    write_splits(tmp_path, train=PICO_GOOD, dev="-DOCSTART-\tO\n\nAspirin\tI-INT\n\n", test=PICO_GOOD)
    message = load_error("ebm-pico", tmp_path)
    assert f"{tmp_path / 'dev.tsv'}:1:" in message
    assert "expected '-DOCSTART- <PMID>' or '-DOCSTART- (<PMID>)', found '-DOCSTART-\\tO'" in message


def test_a_sentence_before_the_first_docstart_line_is_reported(tmp_path):
    write_splits(tmp_path, train="Aspirin\tB\n\n-DOCSTART- 111\n\nhelps\tO\n\n")
    message = load_error("jnlpba", tmp_path)
    assert f"{tmp_path / 'train.tsv'}:1:" in message
    assert "expected a '-DOCSTART- <PMID>' line before the first sentence" in message


def test_a_docstart_line_is_an_error_where_the_distribution_has_none(tmp_path):
    write_splits(tmp_path, dev="-DOCSTART- 111\n\n" + GOOD)
    message = load_error("bc5-disease", tmp_path)
    assert f"{tmp_path / 'dev.tsv'}:1:" in message
    assert "unexpected -DOCSTART- line" in message


def test_a_docstart_line_ends_the_sentence_before_it(tmp_path):
    """17 EBM PICO dev abstracts end without a blank line before the next -DOCSTART-."""
    dev = "-DOCSTART- (111)\n\nAspirin\tI-INT\nhelps\tO\n-DOCSTART- (222)\n\nRest\tO\n\n"
    write_splits(tmp_path, dev=dev, test=PICO_GOOD)
    (tmp_path / "train.tsv").unlink()
    rows = load_dataset_files(spec_for("ebm-pico"), tmp_path).splits["dev"]
    assert [(r["id"], r["document_id"], r["tokens"]) for r in rows] == [
        ("dev-0", "111", ["Aspirin", "helps"]),
        ("dev-1", "222", ["Rest"]),
    ]


def test_examples_point_at_the_first_line_of_their_sentence(tmp_path):
    from plugins.datasets.readers.conll import read_conll

    write_splits(tmp_path)
    rows = read_conll(tmp_path)["test"]
    assert [row["_where"] for row in rows] == [f"{tmp_path / 'test.tsv'}:1", f"{tmp_path / 'test.tsv'}:5"]
