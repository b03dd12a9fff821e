"""i2b2 2006 and i2b2 2014 de-identification into the ``token-tagging`` schema (BIO of PHI types).

Long records are the point (Li et al. 2022 compare long-context models on them), so by default each
record is ONE example with every token of the note (option ``unit="line"`` gives one example per
line instead). Notes are raw text: tokens are words and single punctuation marks, split further
where a PHI boundary falls inside a word (see ``_shared``). Nothing is truncated.

**i2b2 2006** (``deid_surrogate_train_all_version2.xml``, 669 records, and
``deid_surrogate_test_all_groundtruth_version2.xml``, 220 records; ``train.xml``/``test.xml`` are
accepted too). One XML file per split, ``<ROOT><RECORD ID="..."><TEXT>...</TEXT></RECORD>...``,
with the PHI inline: ``<PHI TYPE="DOCTOR">name</PHI>``. Types: AGE, DATE, DOCTOR, HOSPITAL, ID,
LOCATION, PATIENT, PHONE. Each record's text ends with the marker ``[ report_end ]``, which is
dropped. The official train file has one broken tag, ``<PHI TYPE="DATE">25th of July<PHI
TYPE="DOCTOR">`` (line 25722), where the closing ``</PHI>`` was typed as an opening tag; it is
repaired in memory exactly as BigBio's loader does, and any other malformed XML is reported with
its line. Dev: ``dev.xml`` if present, else carved out of train by record.

**i2b2 2014** (``training-PHI-Gold-Set1`` + ``-Set2``: 790 records; ``testing-PHI-Gold-fixed``:
514 records). One XML file per record, ``<deIdi2b2><TEXT><![CDATA[...]]></TEXT><TAGS>`` with one
empty element per PHI, e.g. ``<NAME id="P0" start="16" end="26" text="..." TYPE="PATIENT"
comment=""/>``: the element name is the PHI category, ``TYPE`` its subtype, ``start``/``end``
character offsets into the CDATA. Labels are the seven categories (NAME, PROFESSION, LOCATION,
AGE, DATE, CONTACT, ID) as in the track 1 overview; the subtype is mapped to its category by the
2014 annotation guidelines (PATIENT, DOCTOR, USERNAME -> NAME; ROOM, DEPARTMENT, HOSPITAL,
ORGANIZATION, STREET, CITY, STATE, COUNTRY, ZIP, LOCATION-OTHER -> LOCATION; PHONE, FAX, EMAIL,
URL, IPADDR -> CONTACT; SSN, MEDICALRECORD, HEALTHPLAN, ACCOUNT, LICENSE, VEHICLE, DEVICE,
BIOID, IDNUM -> ID), and an element whose name and subtype disagree is an error. Every span must
lie inside the note and its ``text`` attribute must equal the note's text there (white space
runs compared as one space); otherwise the file and the line of the tag are reported (option
``check_text=False`` trusts the offsets instead). Two known errors of the official training
files are corrected first, as clinicalBERT's preprocessing does: in ``180-03.xml`` the line with
"0808" and "Effingham" lost four spaces that the offsets count, and ``188-05.xml`` annotates
"Johnson & Johnson" with the text "Johnson and Johnson". Splits: ``train/``, ``test/`` and an
optional ``dev/`` directory of XML files (searched recursively, so the official Set1/Set2
directories can sit inside ``train/``); without ``dev/``, dev is carved out of train by patient
(the first digits of ``<patient>-<record>.xml``), so no patient is in both train and dev.
"""

from __future__ import annotations

from pathlib import Path

from biolm.dataset_io import DataFormatError, find_split_file
from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical._shared import (
    SPLITS,
    UNITS,
    Mention,
    carve_dev,
    check_option,
    in_split_order,
    log,
    read_split_directories,
    record_files,
    resolve_overlaps,
    tagged_examples,
)
from plugins.datasets.readers.clinical._xml import Element, parse_xml

# --- i2b2 2006 --------------------------------------------------------------------------------

FILES_2006 = {
    "train": ("deid_surrogate_train_all_version2.xml", "train.xml"),
    "dev": ("dev.xml",),
    "test": ("deid_surrogate_test_all_groundtruth_version2.xml", "test.xml"),
}
BROKEN_TAG_2006 = (b'<PHI TYPE="DATE">25th of July<PHI TYPE="DOCTOR">', b'<PHI TYPE="DATE">25th of July</PHI>')
REPORT_END = "[ report_end ]"


def read_i2b2_2006_deid(directory: Path, dev_fraction: float = 0.1, unit: str = "document") -> dict[str, list[dict]]:
    check_option(unit, UNITS, "unit", directory)
    splits: dict[str, list[dict]] = {}
    for split in SPLITS:
        path = find_split_file(directory, split, FILES_2006)
        if path is None:
            if split == "dev":
                continue
            raise DataFormatError(directory, f"missing the {split} split: looked for {' or '.join(FILES_2006[split])}")
        splits[split] = _read_2006_file(path, unit)
    if "dev" not in splits:
        return carve_dev(splits, dev_fraction, directory / FILES_2006["train"][0])
    return in_split_order(splits)


def _read_2006_file(path: Path, unit: str) -> list[dict]:
    data = path.read_bytes() if path.exists() else None
    if data is not None and BROKEN_TAG_2006[0] in data:
        log.info("%s: repairing the known broken PHI tag after '25th of July'", path)
        data = data.replace(*BROKEN_TAG_2006, 1)
    root = parse_xml(path, data)
    records = list(root.elements("RECORD"))
    if not records:
        raise DataFormatError(path, f'expected <RECORD ID="..."> elements inside <{root.tag}>', root.line)
    examples = []
    for record in records:
        record_id = record.attrs.get("ID")
        if not record_id:
            raise DataFormatError(path, "RECORD without its ID attribute", record.line)
        text_element = record.first("TEXT", path)
        text, mentions = _inline_phi(text_element, path)
        end_marker = text.rfind(REPORT_END)
        if end_marker >= 0 and not text[end_marker + len(REPORT_END) :].strip():
            text = text[:end_marker]
        examples.extend(
            tagged_examples(
                text,
                resolve_overlaps(mentions, "error", "PHI"),
                document_id=record_id,
                source=path,
                first_line=text_element.line,
                unit=unit,
                tokenizer="words",
            )
        )
    return examples


def _inline_phi(text_element: Element, path: Path) -> tuple[str, list[Mention]]:
    """The note of a 2006 <TEXT> with its inline <PHI> tags turned into character spans."""
    pieces: list[str] = []
    mentions = []
    length = 0
    for child in text_element.children:
        if isinstance(child, str):
            pieces.append(child)
            length += len(child)
            continue
        if child.tag != "PHI":
            raise DataFormatError(path, f"unexpected <{child.tag}> inside TEXT; expected only <PHI> tags", child.line)
        phi_type = child.attrs.get("TYPE")
        if not phi_type:
            raise DataFormatError(path, "PHI tag without its TYPE attribute", child.line)
        nested = next(child.elements(), None)
        if nested is not None:
            raise DataFormatError(path, f"<{nested.tag}> nested inside a PHI tag", nested.line)
        phi_text = child.text()
        if not phi_text.strip():
            raise DataFormatError(path, f"empty {phi_type} PHI tag", child.line)
        mentions.append(Mention(length, length + len(phi_text), phi_type, f"{path}:{child.line}"))
        pieces.append(phi_text)
        length += len(phi_text)
    return "".join(pieces), mentions


# --- i2b2 2014 --------------------------------------------------------------------------------

CATEGORIES_2014 = ("NAME", "PROFESSION", "LOCATION", "AGE", "DATE", "CONTACT", "ID")
SUBTYPES_2014 = {
    **dict.fromkeys(("PATIENT", "DOCTOR", "USERNAME"), "NAME"),
    "PROFESSION": "PROFESSION",
    **dict.fromkeys(
        (
            "ROOM",
            "DEPARTMENT",
            "HOSPITAL",
            "ORGANIZATION",
            "STREET",
            "CITY",
            "STATE",
            "COUNTRY",
            "ZIP",
            "LOCATION-OTHER",
        ),
        "LOCATION",
    ),
    "AGE": "AGE",
    "DATE": "DATE",
    **dict.fromkeys(("PHONE", "FAX", "EMAIL", "URL", "IPADDR", "IPADDRESS"), "CONTACT"),
    **dict.fromkeys(
        ("SSN", "MEDICALRECORD", "HEALTHPLAN", "ACCOUNT", "LICENSE", "VEHICLE", "DEVICE", "BIOID", "IDNUM"), "ID"
    ),
}


def read_i2b2_2014_deid(
    directory: Path, dev_fraction: float = 0.1, unit: str = "document", check_text: bool = True
) -> dict[str, list[dict]]:
    check_option(unit, UNITS, "unit", directory)

    def read_split(split: str, path: Path) -> list[dict]:
        files = record_files(path, ".xml", f"<patient>-<record>.xml files in {split}/")
        return [example for file in files for example in _read_2014_record(file, unit, check_text)]

    # By patient: no patient's records end up in both train and dev.
    return read_split_directories(directory, read_split, dev_fraction, group=lambda e: e["document_id"].split("-")[0])


def _same_text(annotated: str, found: str) -> bool:
    return " ".join(annotated.split()) == " ".join(found.split())


def _fix_180_03(text: str) -> str:
    lines = text.split("\n")
    for index, line in enumerate(lines[1:], start=1):
        if "0808" in line and "Effingham" in line:
            lines[index] = line[:9] + " " * 4 + line[9:]
            log.info("180-03.xml: restoring the four spaces missing before 'Effingham'")
            break
    return "\n".join(lines)


def _read_2014_record(path: Path, unit: str, check_text: bool) -> list[dict]:
    root = parse_xml(path)
    text_element = root.first("TEXT", path)
    text = text_element.text()
    if path.name == "180-03.xml":
        text = _fix_180_03(text)
    mentions = []
    for tag in root.first("TAGS", path).elements():
        missing = [name for name in ("start", "end", "text", "TYPE") if name not in tag.attrs]
        if missing:
            raise DataFormatError(path, f"<{tag.tag}> PHI tag without its {' and '.join(missing)} attribute", tag.line)
        category = _category(tag, path)
        try:
            start, end = int(tag.attrs["start"]), int(tag.attrs["end"])
        except ValueError:
            raise DataFormatError(
                path,
                f"PHI offsets must be integers, got start={tag.attrs['start']!r} end={tag.attrs['end']!r}",
                tag.line,
            ) from None
        if not 0 <= start < end <= len(text):
            raise DataFormatError(
                path,
                f"{tag.tag} {tag.attrs.get('id', '')} span [{start}, {end}) is out of range for a TEXT of "
                f"{len(text)} characters",
                tag.line,
            )
        annotated, found = tag.attrs["text"], text[start:end]
        erratum = path.name == "188-05.xml" and annotated == "Johnson and Johnson" and found == "Johnson & Johnson"
        if check_text and not erratum and not _same_text(annotated, found):
            raise DataFormatError(
                path,
                f"{tag.tag} {tag.attrs.get('id', '')} text {annotated!r} does not match TEXT[{start}:{end}] = "
                f"{found!r} (adapter option check_text=False tags by the offsets anyway)",
                tag.line,
            )
        mentions.append(Mention(start, end, category, f"{path}:{tag.line}"))
    return tagged_examples(
        text,
        resolve_overlaps(mentions, "error", "PHI"),
        document_id=path.stem,
        source=path,
        first_line=text_element.line,
        unit=unit,
        tokenizer="words",
    )


def _category(tag: Element, path: Path) -> str:
    subtype = tag.attrs["TYPE"].strip().upper()
    mapped = SUBTYPES_2014.get(subtype)
    if tag.tag in CATEGORIES_2014:
        if mapped is not None and mapped != tag.tag:
            raise DataFormatError(
                path, f"<{tag.tag}> PHI tag with TYPE={subtype!r}, which the guidelines put under {mapped}", tag.line
            )
        return tag.tag
    if mapped is None:
        raise DataFormatError(
            path, f"unknown PHI TYPE {subtype!r} on <{tag.tag}>; expected one of {sorted(SUBTYPES_2014)}", tag.line
        )
    return mapped


ADAPTERS: dict[str, AdapterSpec] = {
    "i2b2-2006-deid": AdapterSpec(
        schema="token-tagging",
        reader="plugins.datasets.readers.clinical.i2b2_deid:read_i2b2_2006_deid",
        options={"dev_fraction": 0.1, "unit": "document"},
        default_path="i2b2-2006-deid/original",
    ),
    "i2b2-2014-deid": AdapterSpec(
        schema="token-tagging",
        reader="plugins.datasets.readers.clinical.i2b2_deid:read_i2b2_2014_deid",
        options={"dev_fraction": 0.1, "unit": "document", "check_text": True},
        default_path="i2b2-2014-deid/original",
    ),
}
