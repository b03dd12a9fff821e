"""Readers of the licence-restricted clinical formats, on invented fixtures in the real formats.

biolm ships none of the real files (data use agreements). tests/fixtures/clinical/<format>/ holds
small notes written for these tests, laid out and encoded exactly as the official releases are
(i2b2 XML and concept files, brat standoff, MedNLI JSONL, ...); no name, date or number in them
belongs to a real patient. Malformed-input tests copy a fixture to a temporary directory and
break one thing, then check that the error names the file, the line and what was expected.
The last test loads the user's own copies from the official data folder (BIOLM_DATA_DIR) when they are there.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from biolm.dataset_io import DataFormatError, LoadedDataset, load_dataset_files, resolve_reader
from plugins.datasets import clinical
from plugins.datasets.readers.clinical import ADAPTERS

FIXTURES = Path(__file__).parent / "fixtures" / "clinical"
SPECS = {spec.slug: spec for spec in clinical.DATASETS}


def load(slug: str, directory: Path, **options: object) -> LoadedDataset:
    adapter = ADAPTERS[slug]
    if options:
        adapter = dataclasses.replace(adapter, options={**adapter.options, **options})
    return load_dataset_files(dataclasses.replace(SPECS[slug], adapter=adapter), directory)


def copy(fixture: str, tmp_path: Path) -> Path:
    target = tmp_path / fixture.replace("/", "-")
    shutil.copytree(FIXTURES / fixture, target)
    return target


def error(call, where: Path, line: int | None, *expected: str) -> DataFormatError:
    """The DataFormatError ``call()`` raises, checked for file, line and expected words."""
    with pytest.raises(DataFormatError) as info:
        call()
    assert info.value.where == (f"{where}:{line}" if line is not None else str(where))
    for words in expected:
        assert words in info.value.message
    return info.value


def by_id(dataset: LoadedDataset, split: str) -> dict[str, dict]:
    return {row["id"]: row for row in dataset.splits[split]}


def tagged(row: dict) -> list[tuple[str, str]]:
    return list(zip(row["tokens"], row["tags"], strict=True))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def whitespace_words(text: str) -> list[str]:
    return text.split()


def line_containing(path: Path, words: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if words in line)


# --- the package ------------------------------------------------------------------------------


def test_every_clinical_slug_has_an_adapter_that_resolves():
    assert set(SPECS) - set(ADAPTERS) == set()
    for slug, adapter in ADAPTERS.items():
        adapter.validate(slug)
        assert callable(resolve_reader(adapter.reader))


# --- MedNLI -----------------------------------------------------------------------------------


def test_mednli_loads_premise_hypothesis_pairs_with_their_gold_labels():
    dataset = load("mednli", FIXTURES / "mednli")
    assert dataset.sizes == {"train": 4, "dev": 2, "test": 3}
    assert dataset.label_set == ["contradiction", "entailment", "neutral"]
    row = dataset.splits["train"][1]
    assert row == {
        "id": "tr01a7c1-66c7-11e7-a8dc-f45c89b91419",
        "text": "Labs were notable for Cr 1.7 (baseline 0.5 per old records) and lactate 2.4.",
        "text_pair": "Patient has normal Cr",
        "labels": ["contradiction"],
    }


def test_a_mednli_line_that_is_not_json_is_reported_with_file_and_line(tmp_path):
    directory = copy("mednli", tmp_path)
    path = directory / "mli_dev_v1.jsonl"
    path.write_text(path.read_text() + '{"sentence1": "unterminated\n', encoding="utf-8")
    error(lambda: load("mednli", directory), path, 3, "not a JSON object")


def test_a_mednli_pair_without_gold_label_is_reported(tmp_path):
    directory = copy("mednli", tmp_path)
    path = directory / "mli_test_v1.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    del record["gold_label"]
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    error(lambda: load("mednli", directory), path, 2, "missing ['gold_label']")


def test_an_unknown_mednli_label_is_reported_with_file_and_line(tmp_path):
    directory = copy("mednli", tmp_path)
    path = directory / "mli_train_v1.jsonl"
    edit(path, '"gold_label": "neutral"', '"gold_label": "-"')
    error(lambda: load("mednli", directory), path, 3, "unknown label '-'")


def test_a_missing_mednli_split_names_the_file_looked_for(tmp_path):
    directory = copy("mednli", tmp_path)
    (directory / "mli_dev_v1.jsonl").unlink()
    error(lambda: load("mednli", directory), directory, None, "missing the dev split", "mli_dev_v1.jsonl")


def test_an_empty_mednli_file_is_reported(tmp_path):
    directory = copy("mednli", tmp_path)
    (directory / "mli_test_v1.jsonl").write_text("")
    error(lambda: load("mednli", directory), directory / "mli_test_v1.jsonl", None, "file is empty")


# --- i2b2 2010 --------------------------------------------------------------------------------


def test_i2b2_2010_tags_concepts_in_bio_per_sentence_and_carves_dev_by_record():
    dataset = load("i2b2-2010", FIXTURES / "i2b2-2010")
    assert dataset.sizes == {"train": 11, "dev": 8, "test": 4}
    assert {row["document_id"] for row in dataset.splits["dev"]} == {"record-101"}
    assert {row["document_id"] for row in dataset.splits["train"]} == {"record-102", "record-201"}
    assert dataset.label_set == ["B-problem", "B-test", "B-treatment", "I-problem", "I-test", "I-treatment", "O"]
    assert tagged(by_id(dataset, "train")["record-102-5"]) == [
        ("Chest", "B-test"),
        ("x-ray", "I-test"),
        ("revealed", "O"),
        ("bilateral", "B-problem"),
        ("pleural", "I-problem"),
        ("effusions", "I-problem"),
        (".", "O"),
    ]
    test = by_id(dataset, "test")["0001-3"]
    assert test["tags"][:6] == ["B-test", "I-test", "I-test", "I-test", "I-test", "I-test"]


def test_an_i2b2_2010_concept_across_a_line_break_is_tagged_once_per_line():
    train = by_id(load("i2b2-2010", FIXTURES / "i2b2-2010"), "train")
    assert tagged(train["record-201-3"])[-2:] == [("coronary", "B-treatment"), ("artery", "I-treatment")]
    assert tagged(train["record-201-4"])[:3] == [("bypass", "B-treatment"), ("graft", "I-treatment"), ("in", "O")]


def test_i2b2_2010_uses_a_dev_directory_when_there_is_one(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    (directory / "train" / "partners").rename(directory / "dev")
    dataset = load("i2b2-2010", directory)
    assert {row["document_id"] for row in dataset.splits["dev"]} == {"record-201"}
    assert dataset.sizes == {"train": 14, "dev": 5, "test": 4}


def test_overlapping_i2b2_2010_concepts_are_reported_with_the_concept_file_and_line(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    con = directory / "train" / "beth" / "concept" / "record-102.con"
    con.write_text(con.read_text() + 'c="shortness of breath" 4:8 4:10||t="problem"\n')
    found = error(lambda: load("i2b2-2010", directory), con, 5, "overlaps problem concept", "flat BIO")
    assert f"{con}:1" in found.message


def test_an_i2b2_2010_concept_beyond_its_line_is_reported(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    con = directory / "train" / "beth" / "concept" / "record-102.con"
    edit(con, "6:4 6:5", "6:4 6:12")
    error(lambda: load("i2b2-2010", directory), con, 4, "6:12 is out of range", "has 10 tokens")


def test_an_i2b2_2010_concept_whose_words_differ_from_the_text_is_reported(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    con = directory / "train" / "beth" / "concept" / "record-102.con"
    edit(con, 'c="chest x-ray" 5:0 5:1', 'c="chest x-ray" 5:1 5:2')
    error(lambda: load("i2b2-2010", directory), con, 2, "does not match the tokens 'x-ray revealed'")


def test_a_broken_i2b2_2010_concept_line_is_reported(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    con = directory / "test" / "concepts" / "0001.con"
    con.write_text(con.read_text() + 'c="appendix" 4:3||t="problem"\n')
    error(lambda: load("i2b2-2010", directory), con, 4, 'expected a concept line c="<text>" <line>:<token>')


def test_an_i2b2_2010_record_without_concept_file_names_the_files_looked_for(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    shutil.rmtree(directory / "test" / "concepts")
    found = error(lambda: load("i2b2-2010", directory), directory / "test" / "txt" / "0001.txt", None)
    assert "concept/0001.con" in found.message and "concepts/0001.con" in found.message


def test_i2b2_2010_without_a_test_directory_is_a_missing_split(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    shutil.rmtree(directory / "test")
    error(lambda: load("i2b2-2010", directory), directory, None, "missing the test split", "test/")


def test_an_i2b2_2010_text_that_is_not_utf8_is_reported_with_its_line(tmp_path):
    directory = copy("i2b2-2010", tmp_path)
    txt = directory / "train" / "beth" / "txt" / "record-102.txt"
    txt.write_bytes(txt.read_bytes().replace(b"woman", b"wom\xe4n"))
    error(lambda: load("i2b2-2010", directory), txt, 4, "not UTF-8")


# --- i2b2 2012 --------------------------------------------------------------------------------


def test_i2b2_2012_tags_events_and_time_expressions_per_sentence():
    dataset = load("i2b2-2012", FIXTURES / "i2b2-2012")
    assert dataset.sizes == {"train": 14, "dev": 4, "test": 5}
    assert {row["document_id"] for row in dataset.splits["dev"]} == {"13"}
    train = by_id(dataset, "train")
    assert tagged(train["11-10"]) == [
        ("She", "O"),
        ("reported", "B-EVIDENTIAL"),
        ("chest", "B-PROBLEM"),
        ("pressure", "I-PROBLEM"),
        ("twice", "B-FREQUENCY"),
        ("daily", "I-FREQUENCY"),
        ("for", "O"),
        ("two", "B-DURATION"),
        ("weeks", "I-DURATION"),
        (".", "O"),
    ]


def test_i2b2_2012_reads_the_raw_cdata_and_tolerates_the_official_files_unescaped_ampersands():
    dataset = load("i2b2-2012", FIXTURES / "i2b2-2012")
    train, test = by_id(dataset, "train"), by_id(dataset, "test")
    # the CDATA keeps &apos; literally and the offsets count it
    assert tagged(train["11-12"])[:3] == [("The", "O"), ("patient&apos;s", "O"), ("pain", "B-PROBLEM")]
    # 21.xml has text="amoxicillin & clavulanate" in a tag: not well-formed XML, read all the same
    assert tagged(test["21-7"])[-4:] == [
        ("amoxicillin", "B-TREATMENT"),
        ("&", "I-TREATMENT"),
        ("clavulanate", "I-TREATMENT"),
        (".", "O"),
    ]
    # an EVENT with an empty type is not tagged
    assert dict(tagged(train["12-8"]))["started"] == "O"


def test_the_i2b2_2012_types_option_keeps_only_the_named_types():
    dataset = load("i2b2-2012", FIXTURES / "i2b2-2012", types=["PROBLEM", "TEST", "TREATMENT"])
    assert {tag[2:] for tag in dataset.label_set if tag != "O"} == {"PROBLEM", "TEST", "TREATMENT"}


def test_an_i2b2_2012_span_outside_the_text_is_reported_with_the_line_of_its_tag(tmp_path):
    directory = copy("i2b2-2012", tmp_path)
    path = directory / "train" / "12.xml"
    edit(path, 'start="120" end="127"', 'start="120" end="9999"')
    error(lambda: load("i2b2-2012", directory), path, 17, "span [120, 9999) is out of range")


def test_overlapping_i2b2_2012_annotations_are_reported_with_both_lines(tmp_path):
    directory = copy("i2b2-2012", tmp_path)
    path = directory / "test" / "21.xml"
    rash = line_containing(path, 'text="rash"')
    start = int(re.search(r'start="(\d+)"', path.read_text().splitlines()[rash - 1]).group(1))
    path.write_text(
        path.read_text().replace(
            "</TAGS>", f'<TIMEX3 id="T9" start="{start + 2}" end="{start + 12}" text="sh began" type="DATE" />\n</TAGS>'
        )
    )
    found = error(lambda: load("i2b2-2012", directory), path, line_containing(path, 'id="T9"'), "flat BIO")
    assert f"overlaps PROBLEM annotation [{start}, {start + 4}) annotated at {path}:{rash}" in found.message


def test_an_i2b2_2012_tag_without_offsets_is_reported(tmp_path):
    directory = copy("i2b2-2012", tmp_path)
    path = directory / "train" / "13.xml"
    text = path.read_text()
    edit(path, 'id="T0" start=', 'id="T0" begin=')
    line = text[: text.index('id="T0" start=')].count("\n") + 1
    error(lambda: load("i2b2-2012", directory), path, line, "TIMEX3 tag without its start attribute")


def test_an_i2b2_2012_file_without_its_cdata_text_is_reported(tmp_path):
    directory = copy("i2b2-2012", tmp_path)
    path = directory / "train" / "11.xml"
    edit(path, "]]></TEXT>", "</TEXT>")
    error(lambda: load("i2b2-2012", directory), path, None, "expected the note as <TEXT><![CDATA[")


# --- i2b2 2006 --------------------------------------------------------------------------------


def test_i2b2_2006_tags_inline_phi_with_one_example_per_record():
    dataset = load("i2b2-2006-deid", FIXTURES / "i2b2-2006")
    assert dataset.sizes == {"train": 2, "dev": 1, "test": 2}
    assert [row["id"] for row in dataset.splits["dev"]] == ["101"]
    assert set(dataset.label_set) <= set(SPECS["i2b2-2006-deid"].labels)
    assert tagged(by_id(dataset, "train")["103"]) == [
        ("778120", "O"),
        ("CGH", "B-HOSPITAL"),
        ("Mr", "O"),
        (".", "O"),
        ("Brisco", "B-PATIENT"),
        (",", "O"),
        ("phone", "O"),
        ("555", "B-PHONE"),
        ("-", "I-PHONE"),
        ("0192", "I-PHONE"),
        (",", "O"),
        ("was", "O"),
        ("discharged", "O"),
        ("home", "O"),
        (".", "O"),
    ]
    dev = dataset.splits["dev"][0]
    assert "&" in dev["tokens"] and "report_end" not in dev["tokens"]


def test_a_long_i2b2_2006_record_keeps_its_full_text():
    raw = (FIXTURES / "i2b2-2006" / "deid_surrogate_test_all_groundtruth_version2.xml").read_text()
    record = re.search(r'<RECORD ID="201">\s*<TEXT>(.*?)\[ report_end \]', raw, re.S).group(1)
    words = whitespace_words(re.sub(r"</?PHI[^>]*>", "", record))
    assert len(words) > 512
    row = by_id(load("i2b2-2006-deid", FIXTURES / "i2b2-2006"), "test")["201"]
    assert "".join(row["tokens"]) == "".join(words)
    assert tagged(row)[-4:] == [("M", "I-DOCTOR"), (".", "I-DOCTOR"), ("D", "I-DOCTOR"), (".", "I-DOCTOR")]


def test_the_i2b2_2006_unit_option_gives_one_example_per_line():
    dataset = load("i2b2-2006-deid", FIXTURES / "i2b2-2006", unit="line")
    line = line_containing(FIXTURES / "i2b2-2006" / "deid_surrogate_train_all_version2.xml", "778120")
    row = by_id(dataset, "train")[f"103-{line}"]
    assert tagged(row) == [("778120", "O"), ("CGH", "B-HOSPITAL")]
    assert len(dataset.splits["train"]) == 6


def test_the_known_broken_tag_of_the_official_2006_train_file_is_repaired(tmp_path):
    directory = copy("i2b2-2006", tmp_path)
    path = directory / "deid_surrogate_train_all_version2.xml"
    edit(path, '<PHI TYPE="DATE">July</PHI> surgery', '<PHI TYPE="DATE">25th of July<PHI TYPE="DOCTOR"> surgery')
    row = by_id(load("i2b2-2006-deid", directory), "dev")["101"]
    assert ("July", "I-DATE") in tagged(row) and ("surgery", "O") in tagged(row)


def test_malformed_i2b2_2006_xml_is_reported_with_its_line(tmp_path):
    directory = copy("i2b2-2006", tmp_path)
    path = directory / "deid_surrogate_train_all_version2.xml"
    edit(path, '<PHI TYPE="DOCTOR">Pell</PHI>', '<PHI TYPE="DOCTOR">Pell</PH>')
    line = line_containing(path, "Pell</PH>")
    error(lambda: load("i2b2-2006-deid", directory), path, line, "not well-formed XML", "mismatched tag")


def test_an_i2b2_2006_phi_tag_without_type_is_reported(tmp_path):
    directory = copy("i2b2-2006", tmp_path)
    path = directory / "deid_surrogate_test_all_groundtruth_version2.xml"
    edit(path, '<PHI TYPE="PATIENT">Wren Halloway</PHI>', "<PHI>Wren Halloway</PHI>")
    line = line_containing(path, "<PHI>Wren")
    error(lambda: load("i2b2-2006-deid", directory), path, line, "PHI tag without its TYPE attribute")


def test_a_missing_i2b2_2006_test_file_names_the_files_looked_for(tmp_path):
    directory = copy("i2b2-2006", tmp_path)
    (directory / "deid_surrogate_test_all_groundtruth_version2.xml").unlink()
    error(
        lambda: load("i2b2-2006-deid", directory),
        directory,
        None,
        "deid_surrogate_test_all_groundtruth_version2.xml or test.xml",
    )


# --- i2b2 2014 --------------------------------------------------------------------------------


def test_i2b2_2014_tags_phi_categories_and_carves_dev_by_patient():
    dataset = load("i2b2-2014-deid", FIXTURES / "i2b2-2014")
    assert dataset.sizes == {"train": 2, "dev": 2, "test": 1}
    assert sorted(row["id"] for row in dataset.splits["dev"]) == ["110-01", "110-02"]
    assert set(dataset.label_set) == set(SPECS["i2b2-2014-deid"].labels) - {"I-AGE", "I-PROFESSION"}
    assert tagged(by_id(dataset, "train")["112-01"]) == [
        ("Record", "O"),
        ("date", "O"),
        (":", "O"),
        ("2071", "B-DATE"),
        ("-", "I-DATE"),
        ("09", "I-DATE"),
        ("-", "I-DATE"),
        ("14", "I-DATE"),
        ("Ms", "O"),
        (".", "O"),
        ("Ferreira", "B-NAME"),
        ("(", "O"),
        ("80", "B-AGE"),
        (")", "O"),
        ("lives", "O"),
        ("in", "O"),
        ("Vermont", "B-LOCATION"),
        ("with", "O"),
        ("her", "O"),
        ("daughter", "O"),
        (".", "O"),
    ]


def test_a_long_i2b2_2014_record_survives_whole_and_words_split_at_phi_boundaries():
    raw = (FIXTURES / "i2b2-2014" / "test" / "210-01.xml").read_text()
    note = raw[raw.index("<![CDATA[") + 9 : raw.index("]]>")]
    assert len(whitespace_words(note)) > 512
    row = load("i2b2-2014-deid", FIXTURES / "i2b2-2014").splits["test"][0]
    assert "".join(row["tokens"]) == "".join(whitespace_words(note))
    pairs = tagged(row)
    assert ("63", "B-AGE") in pairs and ("yo", "O") in pairs  # "63yo" with the AGE "63"


def test_an_i2b2_2014_text_attribute_that_differs_from_the_note_is_reported(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    path = directory / "train" / "set2" / "112-01.xml"
    edit(path, 'text="Ferreira"', 'text="Ferriera"')
    error(lambda: load("i2b2-2014-deid", directory), path, 9, "'Ferriera' does not match TEXT[29:37] = 'Ferreira'")
    assert load("i2b2-2014-deid", directory, check_text=False).sizes["train"] == 2


def test_an_i2b2_2014_span_out_of_range_is_reported_with_the_line_of_its_tag(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    path = directory / "train" / "set2" / "112-01.xml"
    edit(path, 'start="52" end="59"', 'start="52" end="590"')
    error(lambda: load("i2b2-2014-deid", directory), path, 11, "span [52, 590) is out of range")


def test_an_i2b2_2014_subtype_under_the_wrong_category_is_reported(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    path = directory / "train" / "set2" / "112-01.xml"
    edit(path, '<LOCATION id="P3"', '<CONTACT id="P3"')
    error(lambda: load("i2b2-2014-deid", directory), path, 11, "TYPE='STATE'", "under LOCATION")


def test_an_i2b2_2014_phi_tag_without_attributes_is_reported(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    path = directory / "train" / "set2" / "112-01.xml"
    edit(path, ' TYPE="AGE"', "")
    error(lambda: load("i2b2-2014-deid", directory), path, 10, "<AGE> PHI tag without its TYPE attribute")


def test_the_known_offset_error_of_2014_record_180_03_is_corrected(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    line = "Seen 0808Effingham clinic"
    shifted = "Seen 0808    Effingham clinic"
    note = f"Record date: 2080-01-01\n{line}\nDr. Quill\n"
    start = f"Record date: 2080-01-01\n{shifted}\nDr. Quill".index("Quill")
    tag = f'<NAME id="P0" start="{start}" end="{start + 5}" text="Quill" TYPE="DOCTOR" comment="" />'
    (directory / "train" / "set1" / "180-03.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8" ?>\n<deIdi2b2>\n<TEXT><![CDATA[{note}]]></TEXT>\n'
        f"<TAGS>\n{tag}\n</TAGS>\n</deIdi2b2>\n"
    )
    dataset = load("i2b2-2014-deid", directory)
    row = next(r for split in dataset.splits.values() for r in split if r["id"] == "180-03")
    assert ("Quill", "B-NAME") in tagged(row)


def test_an_empty_or_non_utf8_i2b2_2014_file_is_reported(tmp_path):
    directory = copy("i2b2-2014", tmp_path)
    path = directory / "test" / "210-01.xml"
    path.write_bytes(path.read_bytes().replace(b"Marlow", b"M\xe4rlow"))
    error(lambda: load("i2b2-2014-deid", directory), path, 6, "not UTF-8")
    path.write_text("  \n")
    error(lambda: load("i2b2-2014-deid", directory), path, None, "file is empty")


# --- n2c2 2018: concepts ----------------------------------------------------------------------


def test_n2c2_2018_concepts_are_tagged_per_sentence_from_brat_standoff():
    dataset = load("n2c2-2018-ade", FIXTURES / "n2c2-2018")
    assert dataset.sizes == {"train": 9, "dev": 2, "test": 3}
    assert {row["document_id"] for row in dataset.splits["dev"]} == {"101"}
    train = by_id(dataset, "train")
    assert tagged(train["100-3"]) == [
        ("He", "O"),
        ("developed", "O"),
        ("a", "O"),
        ("dry", "B-ADE"),
        ("cough", "I-ADE"),
        ("after", "O"),
        ("one", "O"),
        ("week", "O"),
        (".", "O"),
    ]
    assert tagged(train["100-5"])[11:15] == [
        ("One", "B-Dosage"),
        ("(", "I-Dosage"),
        ("1", "I-Dosage"),
        (")", "I-Dosage"),
    ]


def test_a_discontinuous_n2c2_2018_entity_is_tagged_over_its_extent():
    dev = by_id(load("n2c2-2018-ade", FIXTURES / "n2c2-2018"), "dev")
    assert tagged(dev["101-1"])[-4:] == [("acute", "B-ADE"), ("kidney", "I-ADE"), ("injury", "I-ADE"), (".", "O")]


def test_overlapping_n2c2_2018_entities_keep_the_first_longest_or_are_reported_on_request():
    train = by_id(load("n2c2-2018-ade", FIXTURES / "n2c2-2018"), "train")
    assert train["102-3"]["tags"][5:9] == [
        "B-ADE",
        "I-ADE",
        "I-ADE",
        "I-ADE",
    ]  # the Reason on the same words is dropped
    ann = FIXTURES / "n2c2-2018" / "train" / "102.ann"
    error(lambda: load("n2c2-2018-ade", FIXTURES / "n2c2-2018", overlaps="error"), ann, 4, "Reason entity [92, 124)")


def test_a_brat_line_that_does_not_parse_is_reported_with_file_and_line(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    ann = directory / "train" / "100.ann"
    edit(ann, "T3\tRoute 154 156\tPO", "T3\tRoute 154-156\tPO")
    error(lambda: load("n2c2-2018-ade", directory), ann, 3, "expected an entity line T<n><TAB><type> <start> <end>")


def test_a_brat_span_beyond_the_text_is_reported(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    ann = directory / "test" / "200.ann"
    edit(ann, ann.read_text().splitlines()[1], "T2\tDrug 9000 9008\twarfarin")
    error(lambda: load("n2c2-2018-ade", directory), ann, 2, "span [9000, 9008) is out of range")


def test_a_brat_entity_whose_text_differs_from_the_note_is_reported(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    ann = directory / "train" / "100.ann"
    edit(ann, "\tlisinopril\n", "\taspirin\n")
    error(lambda: load("n2c2-2018-ade", directory), ann, 1, "T1 text 'aspirin' does not match the .txt")


def test_a_note_without_its_ann_file_is_reported(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    (directory / "test" / "200.ann").unlink()
    error(lambda: load("n2c2-2018-ade", directory), directory / "test" / "200.txt", None, "looked for 200.ann")


# --- n2c2 2018: relations ---------------------------------------------------------------------


def test_n2c2_2018_relations_are_ade_drug_candidates_within_adjacent_sentences():
    dataset = load("n2c2-2018-ade-re", FIXTURES / "n2c2-2018")
    assert dataset.sizes == {"train": 3, "dev": 1, "test": 2}
    assert dataset.label_set == ["ADE-Drug", "false"]
    row = by_id(dataset, "dev")["101-T3-T1"]
    text = row["text"]
    assert text.startswith("Brief Hospital Course:\nPatient received vancomycin") and text.endswith("injury.")
    assert text[row["head"]["start"] : row["head"]["end"]] == "acute kidney\ninjury"
    assert text[row["tail"]["start"] : row["tail"]["end"]] == "vancomycin"
    assert (row["head"]["type"], row["tail"]["type"], row["label"]) == ("ADE", "Drug", "ADE-Drug")
    test = by_id(dataset, "test")
    assert test["200-T3-T4"]["label"] == "false"
    assert test["200-T3-T4"]["text"].endswith("GI bleed. Warfarin was held.")


def test_an_ade_drug_relation_beyond_the_window_is_left_out_unless_the_window_grows():
    train = by_id(load("n2c2-2018-ade-re", FIXTURES / "n2c2-2018"), "train")
    assert "102-T2-T1" not in train and train["102-T2-T3"]["label"] == "false"
    wider = by_id(load("n2c2-2018-ade-re", FIXTURES / "n2c2-2018", window=2), "train")
    assert wider["102-T2-T1"]["label"] == "ADE-Drug"


def test_a_relation_to_a_missing_entity_is_reported_with_file_and_line(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    ann = directory / "train" / "101.ann"
    edit(ann, "ADE-Drug Arg1:T3 Arg2:T1", "ADE-Drug Arg1:T3 Arg2:T9")
    error(lambda: load("n2c2-2018-ade-re", directory), ann, 5, "R2 refers to T9, which is not defined in 101.ann")


def test_an_ade_drug_relation_between_other_types_is_reported(tmp_path):
    directory = copy("n2c2-2018", tmp_path)
    ann = directory / "train" / "101.ann"
    edit(ann, "ADE-Drug Arg1:T3 Arg2:T1", "ADE-Drug Arg1:T2 Arg2:T1")
    error(lambda: load("n2c2-2018-ade-re", directory), ann, 5, "must link an ADE and a Drug, got Reason and Drug")


# --- n2c2 2019 STS ----------------------------------------------------------------------------


def test_clinical_sts_reads_train_scores_and_the_separate_test_gold_file():
    dataset = load("n2c2-2019-sts", FIXTURES / "n2c2-2019-sts")
    assert dataset.sizes == {"train": 9, "dev": 1, "test": 4}
    assert [row["score"] for row in dataset.splits["test"]] == [5.0, 4.5, 0.5, 4.0]
    assert dataset.splits["test"][2] == {
        "id": "test-3",
        "text": "Lungs clear to auscultation bilaterally.",
        "text_pair": "Heart regular rate and rhythm.",
        "score": 0.5,
    }
    all_train = {row["id"] for split in ("train", "dev") for row in dataset.splits[split]}
    assert all_train == {f"train-{n}" for n in range(1, 11)}


def test_a_gold_file_with_the_wrong_number_of_scores_is_reported(tmp_path):
    directory = copy("n2c2-2019-sts", tmp_path)
    gold = directory / "clinicalSTS2019.test.gs.sim.txt"
    gold.write_text(gold.read_text() + "3.0\n")
    error(lambda: load("n2c2-2019-sts", directory), gold, None, "5 gold scores for the 4 sentence pairs")


def test_a_clinical_sts_line_with_two_columns_in_train_is_reported(tmp_path):
    directory = copy("n2c2-2019-sts", tmp_path)
    path = directory / "clinicalSTS2019.train.txt"
    edit(path, "No acute distress.\t", "No acute distress. ")
    error(lambda: load("n2c2-2019-sts", directory), path, 4, "expected 3 tab-separated columns, found 2")


def test_a_clinical_sts_score_that_is_not_a_number_or_outside_0_to_5_is_reported(tmp_path):
    directory = copy("n2c2-2019-sts", tmp_path)
    gold = directory / "clinicalSTS2019.test.gs.sim.txt"
    gold.write_text("5.0\n4.5\nhigh\n4.0\n")
    error(lambda: load("n2c2-2019-sts", directory), gold, 3, "got 'high'")
    gold.write_text("5.0\n4.5\n7\n4.0\n")
    error(lambda: load("n2c2-2019-sts", directory), gold, 3, "outside 0-5")


def test_clinical_sts_test_pairs_without_scores_need_the_gold_file(tmp_path):
    directory = copy("n2c2-2019-sts", tmp_path)
    (directory / "clinicalSTS2019.test.gs.sim.txt").unlink()
    error(
        lambda: load("n2c2-2019-sts", directory),
        directory / "clinicalSTS2019.test.txt",
        1,
        "no gold-standard file clinicalSTS2019.test.gs.sim.txt",
    )


def test_a_missing_clinical_sts_train_file_is_reported(tmp_path):
    directory = copy("n2c2-2019-sts", tmp_path)
    (directory / "clinicalSTS2019.train.txt").unlink()
    error(lambda: load("n2c2-2019-sts", directory), directory, None, "looked for clinicalSTS2019.train.txt")


# --- emrQA ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "subset", "sizes"),
    [
        ("emrqa-medication", "medication", {"train": 3, "dev": 1, "test": 2}),
        ("emrqa-relation", "relation", {"train": 1, "dev": 1, "test": 1}),
        ("emrqa-heart-disease", "heart-disease", {"train": 1, "dev": 1, "test": 1}),
    ],
)
def test_emrqa_subsets_load_with_whole_notes_as_contexts(slug, subset, sizes):
    dataset = load(slug, FIXTURES / "emrqa" / subset)
    assert dataset.sizes == sizes
    row = dataset.splits["test"][0]
    assert len(whitespace_words(row["context"])) > 512
    start, text = row["answers"]["answer_start"][0], row["answers"]["text"][0]
    assert row["context"][start : start + len(text)] == text


def test_emrqa_reads_the_clinirc_file_names_of_a_subset(tmp_path):
    for split in ("train", "dev", "test"):
        shutil.copy(FIXTURES / "emrqa" / "heart-disease" / f"{split}.json", tmp_path / f"risk-dataset-{split}.json")
    dataset = load("emrqa-heart-disease", tmp_path)
    assert by_id(dataset, "train")["risk-tr-1"]["answers"] == {
        "text": ["atorvastatin 40 mg nightly"],
        "answer_start": [50],
    }


def test_the_raw_emrqa_layout_is_reported_with_a_pointer_to_the_conversion(tmp_path):
    directory = copy("emrqa/relation", tmp_path)
    path = directory / "dev.json"
    data = json.loads(path.read_text())
    qa = data["data"][0]["paragraphs"][0]["qas"][0]
    qa["question"] = [qa["question"], "Paraphrase?"]
    path.write_text(json.dumps(data, indent=1))
    line = line_containing(path, '"id": "rel-dv-1"')
    error(lambda: load("emrqa-relation", directory), path, line, "question must be a string", "CliniRC")


def test_an_emrqa_answer_not_in_its_context_is_reported_at_its_question(tmp_path):
    directory = copy("emrqa/medication", tmp_path)
    path = directory / "train.json"
    edit(path, '"answer_start": 61', '"answer_start": 62')
    error(
        lambda: load("emrqa-medication", directory),
        path,
        line_containing(path, '"id": "med-tr-3"'),
        "answer '1000 mg twice daily' is not found at offset 62",
    )


def test_emrqa_invalid_json_and_missing_splits_are_reported(tmp_path):
    directory = copy("emrqa/medication", tmp_path)
    (directory / "dev.json").write_text('{"data": [\n  {"title": }\n]}')
    error(lambda: load("emrqa-medication", directory), directory / "dev.json", 2, "invalid JSON")
    (directory / "dev.json").unlink()
    error(lambda: load("emrqa-medication", directory), directory, None, "medication-dev.json or dev.json")


# --- OpenI / MIMIC-AKI ------------------------------------------------------------------------


def test_openi_reads_one_zero_finding_columns_as_multi_labels_for_a_test_only_set():
    dataset = load("openi", FIXTURES / "openi")
    assert dataset.sizes == {"test": 4}
    assert dataset.notes == ["train split absent from this distribution", "dev split absent from this distribution"]
    test = by_id(dataset, "test")
    assert test["CXR1"]["labels"] == []
    assert test["CXR2"]["labels"] == ["Cardiomegaly", "Atelectasis", "Pleural Effusion"]
    assert (
        test["CXR2"]["text"]
        == "Heart size is enlarged. Small bilateral pleural effusions,\nwith bibasilar atelectasis."
    )


def test_openi_accepts_clinical_longformers_layout_with_a_nameless_id_and_txt_last(tmp_path):
    (tmp_path / "test.csv").write_text(
        ",Cardiomegaly,Edema,Consolidation,Pneumonia,Atelectasis,Pneumothorax,Pleural Effusion,TXT\n"
        "222713,0.0,1.0,0.0,0.0,0.0,0.0,0.0,Mild interstitial edema.\n"
    )
    row = load("openi", tmp_path).splits["test"][0]
    assert (row["id"], row["labels"], row["text"]) == ("222713", ["Edema"], "Mild interstitial edema.")


def test_an_openi_value_other_than_0_or_1_is_reported_at_its_own_line_not_where_its_row_starts(tmp_path):
    directory = copy("openi", tmp_path)
    path = directory / "test.csv"
    edit(path, 'with bibasilar atelectasis.",1,0,0,0,1,0,1', 'with bibasilar atelectasis.",1,0,0,0,-1,0,1')
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if 'atelectasis.",1,0,0,0,-1' in text)
    assert line > 3  # the row starts on line 3; its quoted text runs over several lines
    error(lambda: load("openi", directory), path, line, "column 'Atelectasis' must be 0 or 1, got '-1'")


def test_mimic_aki_reads_id_text_label_rows_and_keeps_long_notes_whole():
    dataset = load("mimic-aki", FIXTURES / "mimic-aki")
    assert dataset.sizes == {"train": 4, "dev": 2, "test": 2}
    assert dataset.label_set == ["0", "1"]
    long_note = by_id(dataset, "train")["170335"]
    assert len(whitespace_words(long_note["text"])) > 512
    assert long_note["text"].endswith("creatinine rising from 1.1 to 2.3.") and long_note["labels"] == ["1"]


def test_a_mimic_aki_table_with_the_wrong_columns_is_reported(tmp_path):
    directory = copy("mimic-aki", tmp_path)
    path = directory / "dev.csv"
    edit(path, "id,text,label", "id,note,label")
    error(lambda: load("mimic-aki", directory), path, 1, "expected the header id,text,label, got 'id,note,label'")


def test_a_mimic_aki_row_with_a_missing_field_is_reported(tmp_path):
    directory = copy("mimic-aki", tmp_path)
    path = directory / "test.csv"
    edit(path, '190007,"GI bleed, transfused 2 units PRBC, BUN elevated but creatinine unchanged.",0', "190007,0")
    error(lambda: load("mimic-aki", directory), path, 2, "expected 3 comma-separated fields", "found 2")


def test_an_unknown_mimic_aki_label_is_reported_with_file_and_line(tmp_path):
    directory = copy("mimic-aki", tmp_path)
    path = directory / "dev.csv"
    edit(path, 'started on bicarbonate drip.",1', 'started on bicarbonate drip.",2')
    error(lambda: load("mimic-aki", directory), path, 3, "unknown label '2'")


def test_mimic_aki_bad_encoding_empty_files_and_missing_splits_are_reported(tmp_path):
    directory = copy("mimic-aki", tmp_path)
    path = directory / "train.csv"
    path.write_bytes(path.read_bytes().replace(b"DKA", b"DK\xc1"))
    error(lambda: load("mimic-aki", directory), path, 4, "not UTF-8")
    path.write_text("")
    error(lambda: load("mimic-aki", directory), path, None, "file is empty")
    path.unlink()
    error(lambda: load("mimic-aki", directory), directory, None, "missing the train split: looked for train.csv")


# --- the user's own copies --------------------------------------------------------------------


@pytest.mark.parametrize("slug", sorted(ADAPTERS))
def test_the_real_files_load_when_the_user_has_put_them_in_the_data_directory(slug, official_data):
    directory = official_data(ADAPTERS[slug].default_path)  # not shipped with biolm: the user's copy, if any
    dataset = load(slug, directory)
    assert all(dataset.sizes.values())
