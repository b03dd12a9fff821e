"""BLURB's EBM PICO splits from the original EBM-NLP 2.0 release, by BLURB's procedure.

The release archive itself is 4 MiB and not in the official data folder, so each test writes an archive in
exactly its layout (``ebm_nlp_2_00/documents/<PMID>.tokens``, ``annotations/aggregated/
starting_spans/<element>/{train,test/gold}/<PMID>.AGGREGATED.ann``). The strongest check turns
BLURB's own dev and test files back into such an archive and rebuilds them byte for byte.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from biolm.dataset_io import DataFormatError, load_dataset_files
from biolm.plugins import collect_contributions, get_plugin_manager
from plugins.datasets.readers.conll import read_conll_file
from plugins.datasets.readers.ebm_nlp import main, read_ebm_pico, write_splits

TAG_OF = {"participants": "I-PAR", "interventions": "I-INT", "outcomes": "I-OUT"}


@pytest.fixture(scope="module")
def blurb(official_data) -> Path:
    """BLURB's EBM PICO folder in the official data folder (dev and test, no train)."""
    return official_data("EBM-PICO", "blurb")


def documents_of(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """PMID -> (tokens, tags) of a BLURB EBM PICO file."""
    documents: dict[str, tuple[list[str], list[str]]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-DOCSTART- ("):
            current = documents.setdefault(line[len("-DOCSTART- (") : -1], ([], []))
        elif line:
            token, tag = line.split("\t")
            current[0].append(token)
            current[1].append(tag)
    return documents


def write_release(
    target: Path, documents: dict[str, tuple[list[str], dict[str, list[int]]]], part: str = "train", packed=True
) -> Path:
    """An archive (or folder) in the release's layout: tokens space-separated, labels one per line."""
    files = {}
    for pmid, (tokens, labels) in documents.items():
        files[f"ebm_nlp_2_00/documents/{pmid}.tokens"] = " ".join(tokens)
        files[f"ebm_nlp_2_00/documents/{pmid}.text"] = " ".join(tokens)
        for element, values in labels.items():
            name = f"ebm_nlp_2_00/annotations/aggregated/starting_spans/{element}/{part}/{pmid}.AGGREGATED.ann"
            files[name] = "\n".join(map(str, values)) + "\n"
    if not packed:
        for name, text in files.items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text, encoding="utf-8")
        return target / "ebm_nlp_2_00"
    archive = target / "ebm_nlp_2_00.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def release_labels(tags: list[str]) -> dict[str, list[int]]:
    return {element: [int(tag == tagged) for tag in tags] for element, tagged in TAG_OF.items()}


@pytest.mark.parametrize("split, part", [("dev", "train"), ("test", "test/gold")])
def test_blurbs_dev_and_test_files_are_rebuilt_byte_for_byte_from_a_release_of_their_abstracts(
    tmp_path, split, part, blurb
):
    documents = documents_of(blurb / f"{split}.tsv")
    write_release(tmp_path, {pmid: (tokens, release_labels(tags)) for pmid, (tokens, tags) in documents.items()}, part)
    shutil.copy(blurb / f"{split}_pmid.tsv", tmp_path)
    (written,) = write_splits(tmp_path)
    assert written == tmp_path / f"{split}.tsv"
    assert written.read_bytes() == (blurb / f"{split}.tsv").read_bytes()


def test_where_elements_overlap_the_later_of_participants_interventions_outcomes_wins(tmp_path):
    tokens = ["Aspirin", "in", "older", "adults", "reduced", "pain", "."]
    labels = {
        "participants": [0, 0, 1, 1, 1, 0, 0],
        "interventions": [1, 0, 0, 1, 0, 0, 0],
        "outcomes": [0, 0, 0, 0, 1, 1, 0],
    }
    write_release(tmp_path, {"111": (tokens, labels)})
    (tmp_path / "train_pmid.tsv").write_text("111\n")
    write_splits(tmp_path)
    assert (tmp_path / "train.tsv").read_text() == (
        "-DOCSTART- (111)\n\nAspirin\tI-INT\nin\tO\nolder\tI-PAR\nadults\tI-INT\nreduced\tI-OUT\npain\tI-OUT\n.\tO\n\n"
    )


@pytest.mark.parametrize("packed", [True, False], ids=["archive", "extracted folder"])
def test_the_adapter_builds_the_train_split_from_the_release_next_to_blurbs_pmid_lists(tmp_path, packed, blurb):
    documents = documents_of(blurb / "dev.tsv")
    train_pmids = list(documents)[:40]
    write_release(tmp_path, {p: (documents[p][0], release_labels(documents[p][1])) for p in train_pmids}, packed=packed)
    for split in ("dev", "test"):
        shutil.copy(blurb / f"{split}.tsv", tmp_path)
    (tmp_path / "train_pmid.tsv").write_text(",".join(train_pmids))
    spec = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets["ebm-pico"]
    loaded = load_dataset_files(spec, tmp_path)
    assert set(loaded.splits) == {"train", "dev", "test"} and not loaded.notes
    expected = [
        s for s in read_conll_file(blurb / "dev.tsv", "dev", docstart="pmid") if s["document_id"] in train_pmids
    ]
    assert [(s["document_id"], s["tokens"], s["tags"]) for s in loaded.splits["train"]] == [
        (s["document_id"], s["tokens"], s["tags"]) for s in expected
    ]


def test_without_the_release_train_is_reported_absent_and_dev_and_test_still_load(blurb):
    spec = collect_contributions(get_plugin_manager(load_entrypoints=False)).datasets["ebm-pico"]
    loaded = load_dataset_files(spec, blurb)
    assert set(loaded.splits) == {"dev", "test"} and loaded.notes == ["train split absent from this distribution"]


def test_a_pmid_missing_from_the_release_and_a_label_count_mismatch_are_named(tmp_path):
    write_release(tmp_path, {"111": (["a", "b", "."], {"participants": [0, 1], "outcomes": [0, 0, 0]})})
    (tmp_path / "train_pmid.tsv").write_text("222")
    with pytest.raises(DataFormatError, match=r"has no ebm_nlp_2_00/documents/222.tokens: PMID 222 is not in"):
        read_ebm_pico(tmp_path)
    (tmp_path / "train_pmid.tsv").write_text("111")
    with pytest.raises(DataFormatError, match=r"participants/train/111.AGGREGATED.ann: has 2 labels for the 3 tokens"):
        read_ebm_pico(tmp_path)
    (tmp_path / "train_pmid.tsv").write_text("111,\n12x4")
    with pytest.raises(DataFormatError, match=r"train_pmid.tsv:2: expected comma-separated PMIDs, found '12x4'"):
        read_ebm_pico(tmp_path)


def test_the_command_writes_the_missing_split_and_refuses_a_directory_without_the_release(tmp_path, capsys):
    assert main([str(tmp_path)]) == 1
    assert "no ebm_nlp_2_00.tar.gz" in capsys.readouterr().err
    write_release(tmp_path, {"7": (["Tea", "."], {"interventions": [1, 0]})})
    (tmp_path / "train_pmid.tsv").write_text("7")
    assert main([str(tmp_path)]) == 0
    assert f"wrote {tmp_path / 'train.tsv'}" in capsys.readouterr().out
    assert (tmp_path / "train.tsv").read_text() == "-DOCSTART- (7)\n\nTea\tI-INT\n.\tO\n\n"
    assert main([str(tmp_path)]) == 0 and "nothing written" in capsys.readouterr().out
