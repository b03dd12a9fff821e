"""Sentence- and document-level readers: real BLURB files load with the data README's counts, and
malformed input is reported with its file, its line and what was expected.

The real files are read from the official data folder (BIOLM_DATA_DIR, tests/official_data.py) and
each dataset is parsed once per module; tests that need them skip when the folder is absent.
LitCovid and BioASQ factoid are absent there and use the invented fixtures in
tests/fixtures/sentence_level/.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from biolm.dataset_io import DataFormatError, load_dataset_files
from plugins.datasets import biomedical, blurb
from plugins.datasets.readers import bioasq, biosses, hoc, litcovid, ohsumed, pubmedqa, relation_tsv, squad

FIXTURES = Path(__file__).parent / "fixtures" / "sentence_level"
CATALOGUE = {spec.slug: spec for spec in [*blurb.biolm_datasets(), *biomedical.biolm_datasets()]}
ADAPTERS = {
    **relation_tsv.ADAPTERS,
    **biosses.ADAPTERS,
    **hoc.ADAPTERS,
    **pubmedqa.ADAPTERS,
    **bioasq.ADAPTERS,
    **squad.ADAPTERS,
    **litcovid.ADAPTERS,
    **ohsumed.ADAPTERS,
}


def spec_for(slug: str, **options):
    adapter = ADAPTERS[slug]
    if options:
        adapter = dataclasses.replace(adapter, options={**adapter.options, **options})
    return dataclasses.replace(CATALOGUE[slug], adapter=adapter)


def load(slug: str, directory: Path, **options):
    return load_dataset_files(spec_for(slug, **options), directory)


def real_dir(official_data, slug: str) -> Path:
    """``slug``'s folder in the official data folder (``official_data``: the fixture); the test skips if absent."""
    return official_data(ADAPTERS[slug].default_path)


def label_counts(rows: list[dict]) -> dict[str, int]:
    if "label" in rows[0]:
        return dict(Counter(row["label"] for row in rows))
    return dict(Counter(label for row in rows for label in row["labels"]))


def write(directory: Path, name: str, content: str | bytes) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    return path


def line_containing(text: str, fragment: str) -> int:
    """The 1-based number of the first line of ``text`` containing ``fragment``."""
    return next(number for number, line in enumerate(text.splitlines(), start=1) if fragment in line)


def assert_reported(excinfo: pytest.ExceptionInfo, path: Path, line: int | None, *expected: str) -> None:
    error = excinfo.value
    assert error.where == (f"{path}:{line}" if line is not None else str(path)), str(error)
    for fragment in expected:
        assert fragment in error.message, str(error)


# --- the real files -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chemprot(official_data):
    return load("chemprot", real_dir(official_data, "chemprot"))


@pytest.fixture(scope="module")
def ddi(official_data):
    return load("ddi", real_dir(official_data, "ddi"))


@pytest.fixture(scope="module")
def gad(official_data):
    return load("gad", real_dir(official_data, "gad"))


@pytest.fixture(scope="module")
def euadr(official_data):
    return load("eu-adr", real_dir(official_data, "eu-adr"))


@pytest.fixture(scope="module")
def biosses_data(official_data):
    return load("biosses", real_dir(official_data, "biosses"))


@pytest.fixture(scope="module")
def hoc_data(official_data):
    return load("hoc", real_dir(official_data, "hoc"))


@pytest.fixture(scope="module")
def pubmedqa_data(official_data):
    return load("pubmedqa", real_dir(official_data, "pubmedqa"))


@pytest.fixture(scope="module")
def bioasq_data(official_data):
    return load("bioasq", real_dir(official_data, "bioasq"))


def test_chemprot_loads_with_the_readme_row_and_label_counts(chemprot):
    assert chemprot.sizes == {"train": 18035, "dev": 11268, "test": 15745}
    assert label_counts(chemprot.splits["train"]) == {
        "false": 13923, "CPR:3": 756, "CPR:4": 2227, "CPR:5": 173, "CPR:6": 229, "CPR:9": 727,
    }  # fmt: skip
    assert label_counts(chemprot.splits["dev"]) == {
        "false": 8860, "CPR:3": 546, "CPR:4": 1091, "CPR:5": 115, "CPR:6": 199, "CPR:9": 457,
    }  # fmt: skip
    assert label_counts(chemprot.splits["test"]) == {
        "false": 12315, "CPR:3": 663, "CPR:4": 1655, "CPR:5": 178, "CPR:6": 292, "CPR:9": 642,
    }  # fmt: skip
    assert chemprot.label_set == sorted(CATALOGUE["chemprot"].labels)


def test_chemprot_head_is_the_chemical_placeholder_and_tail_the_gene(chemprot):
    merged = Counter()
    for split, rows in chemprot.splits.items():
        for row in rows:
            head = row["text"][row["head"]["start"] : row["head"]["end"]]
            tail = row["text"][row["tail"]["start"] : row["tail"]["end"]]
            assert (row["head"]["type"], row["tail"]["type"]) == ("CHEMICAL", "GENE")
            if head == "@CHEM-GENE$":
                assert row["head"]["start"] == row["tail"]["start"] and tail == head
                merged[split] += 1
            else:
                assert (head, tail) == ("@CHEMICAL$", "@GENE$")
    assert merged == {"train": 1647, "dev": 946, "test": 1373}


def test_ddi_loads_gzipped_train_with_the_readme_row_and_label_counts(ddi):
    assert ddi.sizes == {"train": 25296, "dev": 2496, "test": 5716}
    assert label_counts(ddi.splits["train"]) == {
        "DDI-false": 21745, "DDI-mechanism": 1163, "DDI-effect": 1486, "DDI-advise": 725, "DDI-int": 177,
    }  # fmt: skip
    assert label_counts(ddi.splits["dev"]) == {
        "DDI-false": 2027, "DDI-mechanism": 156, "DDI-effect": 201, "DDI-advise": 101, "DDI-int": 11,
    }  # fmt: skip
    assert label_counts(ddi.splits["test"]) == {
        "DDI-false": 4737, "DDI-mechanism": 302, "DDI-effect": 360, "DDI-advise": 221, "DDI-int": 96,
    }  # fmt: skip
    assert ddi.label_set == sorted(CATALOGUE["ddi"].labels)


def test_ddi_head_is_the_first_drug_placeholder_and_tail_the_second(ddi):
    merged = Counter()
    for split, rows in ddi.splits.items():
        for row in rows:
            head, tail = row["head"], row["tail"]
            if row["text"][head["start"] : head["end"]] == "@DRUG-DRUG$":
                assert head == tail
                merged[split] += 1
            else:
                assert row["text"][head["start"] : head["end"]] == row["text"][tail["start"] : tail["end"]] == "@DRUG$"
                assert head["end"] <= tail["start"]
    assert merged == {"train": 44, "dev": 3, "test": 7}


def test_gad_loads_with_the_readme_row_and_label_counts(gad):
    assert gad.sizes == {"train": 4261, "dev": 535, "test": 534}
    assert label_counts(gad.splits["train"]) == {"1": 2227, "0": 2034}
    assert label_counts(gad.splits["dev"]) == {"1": 293, "0": 242}
    assert label_counts(gad.splits["test"]) == {"1": 281, "0": 253}
    assert gad.label_set == ["0", "1"]
    for rows in gad.splits.values():
        for row in rows:
            assert row["text"][row["head"]["start"] : row["head"]["end"]] == "@GENE$"
            assert row["text"][row["tail"]["start"] : row["tail"]["end"]] == "@DISEASE$"
            assert (row["head"]["type"], row["tail"]["type"]) == ("GENE", "DISEASE")


def test_eu_adr_fold_1_holds_out_the_last_tenth_of_train_as_dev(euadr):
    assert euadr.sizes == {"train": 286, "dev": 32, "test": 37}
    assert label_counts(euadr.splits["test"]) == {"1": 27, "0": 10}
    assert euadr.splits["dev"][0]["id"] == "train-286" and euadr.splits["dev"][-1]["id"] == "train-317"
    assert euadr.label_set == ["0", "1"]
    for rows in euadr.splits.values():
        for row in rows:
            assert row["text"][row["head"]["start"] : row["head"]["end"]] == "@GENE$"
            assert row["text"][row["tail"]["start"] : row["tail"]["end"]] == "@DISEASE$"


def test_eu_adr_without_a_dev_fraction_is_biobert_train_and_test_with_a_note(official_data):
    loaded = load("eu-adr", real_dir(official_data, "eu-adr"), dev_fraction=0)
    assert loaded.sizes == {"train": 318, "test": 37}
    assert loaded.notes == ["dev split absent from this distribution"]


def test_every_eu_adr_fold_covers_the_355_sentences(official_data):
    directory = real_dir(official_data, "eu-adr")
    for fold in range(1, 11):
        assert sum(load("eu-adr", directory, fold=fold).sizes.values()) == 355, fold


def test_biosses_loads_64_16_20_pairs_with_scores_on_the_0_to_4_scale(biosses_data):
    assert biosses_data.sizes == {"train": 64, "dev": 16, "test": 20}
    scores = [row["score"] for rows in biosses_data.splits.values() for row in rows]
    assert all(0 <= score <= 4 for score in scores)
    assert biosses_data.label_set == []


def test_hoc_loads_one_example_per_abstract_with_blurb_counts(hoc_data):
    assert hoc_data.sizes == {"train": 1295, "dev": 186, "test": 371}
    assert hoc_data.label_set == sorted(CATALOGUE["hoc"].labels)
    assert CATALOGUE["hoc"].labels == hoc.HALLMARKS
    unlabelled = {split: sum(1 for row in rows if not row["labels"]) for split, rows in hoc_data.splits.items()}
    assert unlabelled == {"train": 197, "dev": 22, "test": 53}
    assert label_counts(hoc_data.splits["train"])["sustaining proliferative signaling"] == 315


def test_hoc_abstract_is_its_sentences_in_order_with_the_or_of_their_labels(hoc_data, official_data):
    rows = [
        line.split("\t")
        for line in (real_dir(official_data, "hoc") / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    ]
    pmid = rows[0][2].split("_")[0]
    sentences = [row for row in rows if row[2].startswith(f"{pmid}_s")]
    flagged = {i for row in sentences for i, flag in enumerate(row[0].split(",")) if flag.endswith("_1")}
    abstract = next(row for row in hoc_data.splits["dev"] if row["id"] == pmid)
    assert abstract["text"] == " ".join(row[1] for row in sentences)
    assert abstract["labels"] == [hoc.HALLMARKS[i] for i in sorted(flagged)]
    assert abstract["text_pair"] == ""


def test_pubmedqa_loads_450_50_500_questions_with_the_readme_decisions(pubmedqa_data):
    assert pubmedqa_data.sizes == {"train": 450, "dev": 50, "test": 500}
    assert label_counts(pubmedqa_data.splits["train"]) == {"yes": 249, "no": 152, "maybe": 49}
    assert label_counts(pubmedqa_data.splits["dev"]) == {"yes": 27, "no": 17, "maybe": 6}
    assert label_counts(pubmedqa_data.splits["test"]) == {"yes": 276, "no": 169, "maybe": 55}
    assert pubmedqa_data.label_set == ["maybe", "no", "yes"]


def test_pubmedqa_input_is_question_and_contexts_never_the_long_answer(pubmedqa_data, official_data):
    raw = json.loads((real_dir(official_data, "pubmedqa") / "test_set.json").read_text(encoding="utf-8"))
    for row in pubmedqa_data.splits["test"]:
        entry = raw[row["id"]]
        assert row["text"] == entry["QUESTION"]
        assert row["text_pair"] == " ".join(entry["CONTEXTS"])
        assert entry["LONG_ANSWER"] not in row["text_pair"]


def test_bioasq_yesno_loads_670_75_140_questions_with_the_readme_answers(bioasq_data, official_data):
    assert bioasq_data.sizes == {"train": 670, "dev": 75, "test": 140}
    assert label_counts(bioasq_data.splits["train"]) == {"yes": 552, "no": 118}
    assert label_counts(bioasq_data.splits["dev"]) == {"yes": 62, "no": 13}
    assert label_counts(bioasq_data.splits["test"]) == {"yes": 94, "no": 46}
    assert bioasq_data.label_set == ["no", "yes"]
    listed = (real_dir(official_data, "bioasq") / "dev_id.tsv").read_text(encoding="utf-8").strip().split(",")
    assert [row["id"] for row in bioasq_data.splits["dev"]] == listed
    assert all(row["text"] and row["text_pair"] for row in bioasq_data.splits["dev"])


def test_real_datasets_convert_to_a_datasetdict(gad, hoc_data, biosses_data):
    assert gad.to_datasetdict()["test"][0]["head"]["type"] == "GENE"
    assert hoc_data.to_datasetdict()["dev"].num_rows == 186
    assert biosses_data.to_datasetdict()["train"].num_rows == 64


# --- the fixtures of absent datasets --------------------------------------------------------


def test_litcovid_fixture_loads_title_and_abstract_as_a_pair_with_semicolon_topics():
    directory = FIXTURES / "litcovid"
    loaded = load("litcovid", directory)
    assert loaded.sizes == {"train": 4, "dev": 2, "test": 2}
    first, multiline, no_abstract, case = loaded.splits["train"]
    assert first["text"] == "An invented trial of drug A in hospitalised patients"
    assert first["text_pair"].startswith("We invented this abstract. Drug A, given")
    assert multiline["labels"] == ["Prevention", "Transmission"]
    assert multiline["text_pair"] == "An invented abstract\nthat spans two lines inside its quotes."
    assert no_abstract["text_pair"] == ""
    assert case["labels"] == ["Case Report", "Diagnosis"]
    assert loaded.label_set == sorted(CATALOGUE["litcovid"].labels)


def test_litcovid_examples_are_located_at_the_line_their_record_starts_on():
    path = FIXTURES / "litcovid" / "BC7-LitCovid-Train.csv"
    rows = litcovid.read_articles(path)
    assert [row["_where"] for row in rows] == [f"{path}:{line}" for line in (2, 3, 5, 6)]


def test_bioasq_factoid_fixture_loads_squad_json_without_a_dev_file():
    loaded = load("bioasq-factoid", FIXTURES / "bioasq-factoid")
    assert loaded.sizes == {"train": 2, "test": 1}
    assert loaded.notes == ["dev split absent from this distribution"]
    assert loaded.splits["train"][1]["answers"] == {"text": ["zinc", "copper"], "answer_start": [15, 24]}
    assert loaded.splits["test"][0]["answers"] == {"text": [], "answer_start": []}
    assert loaded.to_datasetdict()["train"][0]["answers"]["text"] == ["inventin"]


# --- malformed input: relation TSVs ---------------------------------------------------------

CHEMPROT_OK = "1.T1.T2\t@CHEMICAL$ inhibits @GENE$.\tCPR:4\n"


def chemprot_dir(tmp_path: Path, train: str) -> Path:
    write(tmp_path, "train.tsv", train)
    write(tmp_path, "dev.tsv", CHEMPROT_OK)
    write(tmp_path, "test.tsv", CHEMPROT_OK)
    return tmp_path


def test_a_relation_row_with_two_columns_is_reported_with_file_and_line(tmp_path):
    directory = chemprot_dir(tmp_path, CHEMPROT_OK + "2.T1.T2\t@CHEMICAL$ binds @GENE$.\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(excinfo, directory / "train.tsv", 2, "expected 3 tab-separated columns, found 2")


def test_a_chemprot_row_without_its_gene_placeholder_is_reported(tmp_path):
    directory = chemprot_dir(
        tmp_path, CHEMPROT_OK + CHEMPROT_OK.replace("1.", "2.") + "3.T1\t@CHEMICAL$ alone.\tfalse\n"
    )
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(
        excinfo,
        directory / "train.tsv",
        3,
        "expected the placeholders @CHEMICAL$ and @GENE$ once each, or a single @CHEM-GENE$",
        "found @CHEMICAL$",
    )


def test_a_chemprot_row_with_a_repeated_placeholder_is_reported(tmp_path):
    directory = chemprot_dir(tmp_path, "1.T1.T2\t@CHEMICAL$ and @CHEMICAL$ bind @GENE$.\tfalse\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(excinfo, directory / "train.tsv", 1, "found @CHEMICAL$, @CHEMICAL$, @GENE$")


def test_an_overlapping_chemprot_pair_gives_identical_head_and_tail_typed_by_argument(tmp_path):
    directory = chemprot_dir(tmp_path, "1.T1.T2\tThe @CHEM-GENE$ complex.\tfalse\n")
    row = load("chemprot", directory).splits["train"][0]
    assert row["head"] == {"start": 4, "end": 15, "type": "CHEMICAL"}
    assert row["tail"] == {"start": 4, "end": 15, "type": "GENE"}


def test_a_ddi_row_with_a_single_drug_placeholder_is_reported(tmp_path):
    ok = "DDI-x.d1.s0.p0\t@DRUG$ with @DRUG$.\tDDI-false\n"
    write(tmp_path, "train.tsv.gz", ok + "DDI-x.d1.s0.p1\t@DRUG$ with aspirin.\tDDI-false\n")
    write(tmp_path, "dev.tsv", ok)
    write(tmp_path, "test.tsv", ok)
    with pytest.raises(DataFormatError) as excinfo:
        load("ddi", tmp_path)
    assert_reported(
        excinfo, tmp_path / "train.tsv.gz", 2, "expected the placeholders @DRUG$ twice, or a single @DRUG-DRUG$"
    )


def test_a_relation_label_outside_the_catalogue_set_is_reported_with_its_line(tmp_path):
    directory = chemprot_dir(tmp_path, CHEMPROT_OK + "2.T1.T2\t@GENE$ and @CHEMICAL$.\tCPR:10\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(excinfo, directory / "train.tsv", 2, "unknown label 'CPR:10'", "CPR:9")


def test_a_missing_relation_split_file_names_the_files_looked_for(tmp_path):
    write(tmp_path, "train.tsv", CHEMPROT_OK)
    write(tmp_path, "test.tsv", CHEMPROT_OK)
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", tmp_path)
    assert_reported(excinfo, tmp_path, None, "no dev file: looked for 'dev.tsv'")


def test_a_missing_ddi_train_file_names_both_names_looked_for(tmp_path):
    with pytest.raises(DataFormatError) as excinfo:
        load("ddi", tmp_path)
    assert_reported(excinfo, tmp_path, None, "no train file: looked for 'train.tsv.gz' or 'train.tsv'")


def test_an_empty_relation_file_is_reported(tmp_path):
    directory = chemprot_dir(tmp_path, "")
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(excinfo, directory / "train.tsv", None, "file is empty")


def test_bad_utf8_in_a_relation_file_is_reported_at_its_line(tmp_path):
    directory = chemprot_dir(tmp_path, (CHEMPROT_OK * 2).encode() + b"3.T1.T2\t@CHEMICAL$ \xff @GENE$.\tfalse\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("chemprot", directory)
    assert_reported(excinfo, directory / "train.tsv", 3, "not UTF-8")


def test_a_gad_file_without_its_header_is_reported(tmp_path):
    for split in ("train", "dev", "test"):
        write(tmp_path, f"{split}.tsv", "index\tsentence\tlabel\n0\t@GENE$ in @DISEASE$.\t1\n")
    write(tmp_path, "dev.tsv", "0\t@GENE$ in @DISEASE$.\t1\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("gad", tmp_path)
    assert_reported(excinfo, tmp_path / "dev.tsv", 1, "expected the header 'index<TAB>sentence<TAB>label'")


def test_a_gad_row_with_a_chemical_placeholder_is_reported(tmp_path):
    for split in ("train", "dev", "test"):
        write(tmp_path, f"{split}.tsv", "index\tsentence\tlabel\n0\t@GENE$ in @DISEASE$.\t1\n")
    write(tmp_path, "test.tsv", "index\tsentence\tlabel\n0\t@GENE$ in @DISEASE$.\t1\n1\t@GENE$ and @CHEMICAL$.\t0\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("gad", tmp_path)
    assert_reported(excinfo, tmp_path / "test.tsv", 3, "@GENE$ and @DISEASE$ once each", "found @GENE$, @CHEMICAL$")


def test_an_eu_adr_train_row_with_three_columns_is_reported(tmp_path):
    write(tmp_path, "1/train.tsv", "@GENE$ in @DISEASE$.\t1\n7\t@GENE$ in @DISEASE$.\t1\n")
    write(tmp_path, "1/test.tsv", "index\tsentence\tlabel\n0\t@GENE$ in @DISEASE$.\t1\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("eu-adr", tmp_path)
    assert_reported(excinfo, tmp_path / "1" / "train.tsv", 2, "expected 2 tab-separated columns, found 3")


def test_a_missing_eu_adr_fold_is_reported(tmp_path):
    with pytest.raises(DataFormatError) as excinfo:
        load("eu-adr", tmp_path, fold=11)
    assert_reported(excinfo, tmp_path, None, "no fold folder 11/")


# --- malformed input: BIOSSES, HoC, BioASQ yes/no -------------------------------------------

BIOSSES_OK = "pair_id\tsent1\tsent2\tscore\n1\tA sentence.\tAnother sentence.\t2.2\n"


def test_a_biosses_score_that_is_not_a_number_is_reported(tmp_path):
    write(tmp_path, "train.tsv", BIOSSES_OK + "2\tA.\tB.\thigh\n")
    write(tmp_path, "dev.tsv", BIOSSES_OK)
    write(tmp_path, "test.tsv", BIOSSES_OK)
    with pytest.raises(DataFormatError) as excinfo:
        load("biosses", tmp_path)
    assert_reported(excinfo, tmp_path / "train.tsv", 3, "expected a numeric similarity score in column 4, got 'high'")


def test_a_biosses_row_with_three_columns_is_reported(tmp_path):
    write(tmp_path, "train.tsv", BIOSSES_OK)
    write(tmp_path, "dev.tsv", BIOSSES_OK + "2\tA.\t3.0\n")
    write(tmp_path, "test.tsv", BIOSSES_OK)
    with pytest.raises(DataFormatError) as excinfo:
        load("biosses", tmp_path)
    assert_reported(excinfo, tmp_path / "dev.tsv", 3, "expected 4 tab-separated columns, found 3")


HOC_HEADER = "labels\tsentence\tindex\n"
NO_FLAGS = ",".join(f"{i}_0" for i in range(10))


def hoc_dir(tmp_path: Path, train_rows: str) -> Path:
    ok = HOC_HEADER + f"{NO_FLAGS}\tA sentence .\t1_s0\n"
    write(tmp_path, "train.tsv", HOC_HEADER + train_rows)
    write(tmp_path, "dev.tsv", ok)
    write(tmp_path, "test.tsv", ok)
    return tmp_path


def test_hoc_sentences_are_joined_and_their_flags_ored_per_abstract(tmp_path):
    flags_a = NO_FLAGS.replace("2_0", "2_1")
    flags_b = NO_FLAGS.replace("9_0", "9_1")
    rows = f"{flags_a}\tFirst .\t7_s0\n{NO_FLAGS}\tOther .\t8_s0\n{flags_b}\tSecond .\t7_s1\n"
    loaded = load("hoc", hoc_dir(tmp_path, rows))
    first, other = loaded.splits["train"]
    assert first == {
        "id": "7",
        "text": "First . Second .",
        "text_pair": "",
        "labels": [hoc.HALLMARKS[2], hoc.HALLMARKS[9]],
    }
    assert other["labels"] == []


def test_a_hoc_labels_column_with_nine_flags_is_reported(tmp_path):
    nine = ",".join(f"{i}_0" for i in range(9))
    directory = hoc_dir(tmp_path, f"{NO_FLAGS}\tFine .\t1_s0\n{nine}\tShort .\t1_s1\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("hoc", directory)
    assert_reported(excinfo, directory / "train.tsv", 3, "expected the labels column as 0_x,1_x,2_x")


def test_a_hoc_index_without_a_sentence_number_is_reported(tmp_path):
    directory = hoc_dir(tmp_path, f"{NO_FLAGS}\tFine .\t12345\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("hoc", directory)
    assert_reported(excinfo, directory / "train.tsv", 2, "expected the index column as <PMID>_s<n>, got '12345'")


def test_a_hoc_sentence_listed_twice_is_reported(tmp_path):
    directory = hoc_dir(tmp_path, f"{NO_FLAGS}\tOnce .\t5_s0\n{NO_FLAGS}\tTwice .\t5_s0\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("hoc", directory)
    assert_reported(excinfo, directory / "train.tsv", 3, "sentence 5_s0 appears twice")


def test_a_hoc_file_with_the_wrong_header_is_reported(tmp_path):
    directory = hoc_dir(tmp_path, "")
    write(directory, "test.tsv", f"sentence\tlabels\tindex\nA .\t{NO_FLAGS}\t1_s0\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("hoc", directory)
    assert_reported(excinfo, directory / "test.tsv", 1, "expected the header 'labels<TAB>sentence<TAB>index'")


def test_a_bioasq_row_without_its_passage_is_reported(tmp_path):
    ok = "q1\tIs it?\tIt is.\tyes\n"
    write(tmp_path, "train.tsv", ok)
    write(tmp_path, "dev.tsv", ok)
    write(tmp_path, "test.tsv", ok + ok.replace("q1", "q2") + "q3\tIs it?\tno\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq", tmp_path)
    assert_reported(excinfo, tmp_path / "test.tsv", 3, "expected 4 tab-separated columns, found 3")


def test_a_bioasq_answer_outside_yes_no_is_reported_with_its_line(tmp_path):
    ok = "q1\tIs it?\tIt is.\tyes\n"
    write(tmp_path, "train.tsv", ok + "q2\tIs it?\tPerhaps.\tmaybe\n")
    write(tmp_path, "dev.tsv", ok)
    write(tmp_path, "test.tsv", ok)
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq", tmp_path)
    assert_reported(excinfo, tmp_path / "train.tsv", 2, "unknown label 'maybe'")


# --- malformed input: JSON (PubMedQA, SQuAD) ------------------------------------------------


def pubmedqa_entry(decision: str = "yes", **extra) -> dict:
    entry = {"QUESTION": "Is it?", "CONTEXTS": ["Context one.", "Context two."], "LONG_ANSWER": "It is."}
    entry["final_decision"] = decision
    entry.update(extra)
    return entry


def pubmedqa_dir(tmp_path: Path, train_text: str) -> Path:
    ok = json.dumps({"1": pubmedqa_entry()}, indent=4)
    write(tmp_path, "pqal_fold0/train_set.json", train_text)
    write(tmp_path, "pqal_fold0/dev_set.json", ok)
    write(tmp_path, "test_set.json", ok)
    return tmp_path


def test_a_broken_pubmedqa_json_line_is_reported_with_file_and_line(tmp_path):
    text = json.dumps({"1": pubmedqa_entry(), "2": pubmedqa_entry()}, indent=4)
    question = line_containing(text, '"QUESTION"')
    lines = text.splitlines()
    lines[question - 1] = lines[question - 1].rstrip(",")  # drop the comma after entry 1's question
    directory = pubmedqa_dir(tmp_path, "\n".join(lines))
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    where = directory / "pqal_fold0" / "train_set.json"
    assert_reported(excinfo, where, question + 1, "invalid JSON: Expecting ',' delimiter")


def test_a_pubmedqa_entry_without_final_decision_is_reported_at_its_opening_line(tmp_path):
    second = pubmedqa_entry()
    del second["final_decision"]
    text = json.dumps({"1": pubmedqa_entry(), "2": second}, indent=4)
    directory = pubmedqa_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    line = line_containing(text, '"2": {')
    assert_reported(
        excinfo, directory / "pqal_fold0" / "train_set.json", line, "entry 2: expected final_decision as a string"
    )


def test_a_pubmedqa_decision_outside_yes_no_maybe_is_reported_at_the_line_of_the_decision(tmp_path):
    text = json.dumps({"1": pubmedqa_entry(), "2": pubmedqa_entry("perhaps")}, indent=4)
    directory = pubmedqa_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    line = line_containing(text, '"final_decision": "perhaps"')
    assert line > line_containing(text, '"2": {')  # not the entry's first line
    assert_reported(excinfo, directory / "pqal_fold0" / "train_set.json", line, "unknown label 'perhaps'")


def test_pubmedqa_never_reads_the_long_answer(tmp_path):
    directory = pubmedqa_dir(tmp_path, json.dumps({"1": pubmedqa_entry()}))
    row = load("pubmedqa", directory).splits["train"][0]
    assert (row["text"], row["text_pair"], row["labels"]) == ("Is it?", "Context one. Context two.", ["yes"])


def test_a_missing_pubmedqa_dev_file_names_its_path_in_the_fold(tmp_path):
    directory = pubmedqa_dir(tmp_path, json.dumps({"1": pubmedqa_entry()}))
    (directory / "pqal_fold0" / "dev_set.json").unlink()
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    assert_reported(excinfo, directory, None, "no dev file: looked for 'pqal_fold0/dev_set.json'")


def test_an_empty_pubmedqa_file_is_reported(tmp_path):
    directory = pubmedqa_dir(tmp_path, "  \n")
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    assert_reported(excinfo, directory / "pqal_fold0" / "train_set.json", None, "file is empty")


def test_bad_utf8_in_a_pubmedqa_file_is_reported_at_its_line(tmp_path):
    text = json.dumps({"1": pubmedqa_entry()}, indent=4).encode().replace(b"Context two.", b"Context \xff.")
    directory = pubmedqa_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("pubmedqa", directory)
    assert_reported(excinfo, directory / "pqal_fold0" / "train_set.json", 6, "not UTF-8")


def squad_text(*qas: dict, context: str = "Inventin binds zinc.") -> str:
    return json.dumps({"data": [{"paragraphs": [{"context": context, "qas": list(qas)}]}]}, indent=2)


def squad_dir(tmp_path: Path, train_text: str) -> Path:
    write(tmp_path, "train.json", train_text)
    write(tmp_path, "test.json", squad_text({"id": "t1", "question": "Which metal?"}))
    return tmp_path


def test_a_broken_squad_json_line_is_reported_with_file_and_line(tmp_path):
    text = squad_text({"id": "q1", "question": "Which metal?", "answers": []}).replace('"qas"', "qas")
    directory = squad_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq-factoid", directory)
    line = line_containing(text, "qas:")
    assert_reported(excinfo, directory / "train.json", line, "invalid JSON")


def test_a_squad_answer_without_answer_start_is_reported_at_the_answer(tmp_path):
    text = squad_text(
        {"id": "q1", "question": "Which metal?", "answers": [{"text": "zinc", "answer_start": 15}]},
        {"id": "q2", "question": "Which one?", "answers": [{"text": "metal"}]},
    )
    directory = squad_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq-factoid", directory)
    line = line_containing(text, '"text": "metal"') - 1  # the line of the answer's "{"
    assert_reported(excinfo, directory / "train.json", line, 'expected "answer_start" as an integer, got None')


def test_a_squad_answer_not_at_its_offset_is_reported_at_the_line_of_its_offset(tmp_path):
    text = squad_text({"id": "q1", "question": "Which metal?", "answers": [{"text": "zinc", "answer_start": 3}]})
    directory = squad_dir(tmp_path, text)
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq-factoid", directory)
    line = line_containing(text, '"answer_start": 3')
    assert line > line_containing(text, '"id": "q1"')  # not the question's first line
    assert_reported(excinfo, directory / "train.json", line, "answer 'zinc' is not found at offset 3")


def test_a_squad_file_without_data_is_reported(tmp_path):
    directory = squad_dir(tmp_path, json.dumps({"version": "1.1"}))
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq-factoid", directory)
    assert_reported(excinfo, directory / "train.json", 1, 'expected "data" as a list, got None')


def test_a_missing_squad_test_file_names_the_files_looked_for(tmp_path):
    write(tmp_path, "train.json", squad_text())
    with pytest.raises(DataFormatError) as excinfo:
        load("bioasq-factoid", tmp_path)
    assert_reported(excinfo, tmp_path, None, "no test file: looked for 'test.json' or 'BioASQ-test-factoid-7b.json'")


# --- malformed input: LitCovid CSV ----------------------------------------------------------

LITCOVID_HEADER = "pmid,journal,title,abstract,keywords,pub_type,authors,doi,label\n"
LITCOVID_OK = LITCOVID_HEADER + '1,J,A title,"An abstract, with a comma.",k,Journal Article,A B,10.1/x,Treatment\n'


def litcovid_dir(tmp_path: Path, train: str | bytes) -> Path:
    write(tmp_path, "BC7-LitCovid-Train.csv", train)
    write(tmp_path, "BC7-LitCovid-Dev.csv", LITCOVID_OK)
    write(tmp_path, "BC7-LitCovid-Test-GS.csv", LITCOVID_OK)
    return tmp_path


def test_a_litcovid_row_with_too_few_fields_is_reported_after_a_multiline_record(tmp_path):
    train = LITCOVID_OK + '2,J,Title,"Two\nlines",k,p,a,d,Diagnosis\n3,J,Title,Abstract,Mechanism\n'
    directory = litcovid_dir(tmp_path, train)
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 5, "expected 9 comma-separated fields, found 5")


def test_a_litcovid_row_without_a_topic_is_reported(tmp_path):
    directory = litcovid_dir(tmp_path, LITCOVID_OK + "2,J,Title,Abstract,k,p,a,d, ; \n")
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 3, "expected at least one ';'-separated topic")


def test_a_litcovid_topic_outside_the_seven_is_reported_with_its_line(tmp_path):
    directory = litcovid_dir(tmp_path, LITCOVID_OK + "2,J,Title,Abstract,k,p,a,d,Treatment;General Info\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 3, "unknown label 'General Info'")


def test_a_litcovid_header_without_the_label_column_is_reported(tmp_path):
    directory = litcovid_dir(tmp_path, LITCOVID_HEADER.replace(",label", "") + "1,J,T,A,k,p,a,d\n")
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 1, "missing ['label']")


def test_bad_utf8_in_a_litcovid_file_is_reported_at_its_line(tmp_path):
    train = LITCOVID_OK.encode() + b'2,J,Title,"Line one\nline \xff two",k,p,a,d,Treatment\n'
    directory = litcovid_dir(tmp_path, train)
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 4, "not UTF-8")


def test_an_unclosed_litcovid_quote_is_reported_at_the_record_start(tmp_path):
    directory = litcovid_dir(tmp_path, LITCOVID_OK + '2,J,Title,"An abstract that never ends,k,p,a,d,Treatment\n')
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", 3, "broken CSV record")


def test_an_empty_litcovid_file_is_reported(tmp_path):
    directory = litcovid_dir(tmp_path, "")
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory / "BC7-LitCovid-Train.csv", None, "file is empty")


def test_a_missing_litcovid_test_file_names_the_gold_standard_file(tmp_path):
    directory = litcovid_dir(tmp_path, LITCOVID_OK)
    (directory / "BC7-LitCovid-Test-GS.csv").unlink()
    with pytest.raises(DataFormatError) as excinfo:
        load("litcovid", directory)
    assert_reported(excinfo, directory, None, "no test file: looked for 'BC7-LitCovid-Test-GS.csv'")


# --- OHSUMed (Li et al. 2022): the public ohsumed-first-20000-docs layout ------------------------------


def test_ohsumed_keeps_single_category_abstracts_and_carves_dev_out_of_training():
    data = load("ohsumed", FIXTURES / "ohsumed")
    train_and_dev = {row["id"]: row for row in data.splits["train"] + data.splits["dev"]}
    assert sorted(train_and_dev) == ["0000101", "0000102", "0000104", "0000105", "0000106", "0000107"]  # not 0000103
    assert data.splits["dev"] and data.sizes["test"] == 3
    first = train_and_dev["0000101"]
    assert first["labels"] == ["C01"] and first["text_pair"] == ""
    assert (
        first["text"]
        == "Bacterial endocarditis after dental extraction. A case of streptococcal endocarditis in an adult."
    )
    assert {row["labels"][0] for row in data.splits["test"]} == {"C01", "C04", "C14"}
    assert load("ohsumed", FIXTURES / "ohsumed").splits == data.splits  # the same dev documents every time


def test_ohsumed_errors_name_the_path(tmp_path):
    shutil.copytree(FIXTURES / "ohsumed", tmp_path / "o")
    (tmp_path / "o" / "training" / "C99").mkdir()
    with pytest.raises(DataFormatError, match=r"C99: expected category directories C01 \.\.\. C23"):
        load("ohsumed", tmp_path / "o")
    (tmp_path / "o" / "training" / "C99").rmdir()
    (tmp_path / "o" / "training" / "C14" / "0000105").write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"0000105: file is empty"):
        load("ohsumed", tmp_path / "o")
    (tmp_path / "o" / "training" / "C14" / "0000105").write_text("Atrial fibrillation.\n")
    shutil.rmtree(tmp_path / "o" / "test")
    with pytest.raises(DataFormatError, match=r"test: split directory not found"):
        load("ohsumed", tmp_path / "o")
