"""biolm.archives against hostile tar and zip files: each is refused, says why, and writes nothing outside."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from hostile_inputs import (
    CANARY,
    EXTENDED_HEADERS,
    cve_2025_4517_tar,
    files_under,
    member,
    peak_allocated,
    tar_bomb,
    tar_bz2_bomb,
    tar_with,
    tar_with_extended_header,
    tar_with_many_members,
    zip_bomb,
    zip_symlink,
    zip_with,
    zip_with_many_members,
)

from biolm.archives import ArchiveRefused, copy_tree, unpack
from biolm.intake_limits import MIB, ArchiveLimits

LIMITS = ArchiveLimits()


@pytest.fixture
def sandbox(tmp_path) -> dict[str, Path]:
    """A destination, and beside it the folder an attack aims at (empty, so anything in it was written)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"destination": tmp_path / "work" / "unpacked", "outside": outside, "root": tmp_path}


def refused(source, sandbox, match: str, limits: ArchiveLimits = LIMITS, **kwargs) -> None:
    with pytest.raises(ArchiveRefused, match=match):
        unpack(source, sandbox["destination"], limits, label="upload.tar.gz", **kwargs)
    assert files_under(sandbox["outside"]) == set()
    assert not any(CANARY in p.read_text(errors="ignore") for p in sandbox["root"].rglob("*")
                   if p.is_file() and p.suffix not in (".gz", ".zip", ".tar"))  # fmt: skip


TAR_CASES = [
    ("traversal", [(member("../outside/x"), CANARY.encode())], r"outside the archive's folder \('\.\.'\)"),
    ("deep traversal", [(member("a/b/../../../outside/x"), CANARY.encode())], r"outside the archive's folder"),
    ("absolute", [(member("/tmp/biolm-absolute-x"), CANARY.encode())], "absolute or Windows path"),
    ("windows drive", [(member("C:/Windows/x"), CANARY.encode())], "absolute or Windows path"),
    ("backslash", [(member("..\\..\\outside\\x"), CANARY.encode())], "absolute or Windows path"),
    ("symlink out", [(member("link", tarfile.SYMTYPE, "/etc/passwd"), None)], "'link' is a symbolic link"),
    ("symlink in", [(member("config.json", tarfile.SYMTYPE, "vocab.txt"), None)], "is a symbolic link"),
    ("hard link", [(member("h", tarfile.LNKTYPE, "/etc/passwd"), None)], "'h' is a hard link"),
    ("device", [(member("dev", tarfile.CHRTYPE), None)], "'dev' is a device file"),
    ("block device", [(member("blk", tarfile.BLKTYPE), None)], "is a device file"),
    ("fifo", [(member("pipe", tarfile.FIFOTYPE), None)], "'pipe' is a FIFO"),
    ("control character", [(member("conf\x1big.json"), b"{}")], "control or formatting characters"),
    ("right-to-left override", [(member("model\u202enosj.safetensors"), b"{}")], "control or formatting"),
    ("duplicate", [(member("a.json"), b"{}"), (member("./a.json"), b"{}")], "'a.json' appears twice"),
    ("file then folder", [(member("a"), b"x"), (member("a/b"), b"x")], "passes through a file"),
]


@pytest.mark.parametrize(("case", "members", "match"), TAR_CASES, ids=[c[0] for c in TAR_CASES])
def test_a_tar_with_a_hostile_member_is_refused_and_writes_nothing_outside(case, members, match, sandbox):
    archive = tar_with(sandbox["root"] / "upload.tar.gz", members)
    refused(archive, sandbox, match)
    assert not Path("/tmp/biolm-absolute-x").exists()


def test_the_cve_2025_4517_nested_symlink_tar_writes_nothing_outside_its_folder(sandbox):
    destination = sandbox["destination"]
    archive = cve_2025_4517_tar(sandbox["root"] / "cve.tar", destination, sandbox["outside"])
    refused(archive, sandbox, r"member 'a' is a symbolic link")
    # Nothing but the first harmless directory was made, and only inside the destination.
    assert all(not p.is_symlink() for p in destination.rglob("*"))


ZIP_CASES = [
    ("traversal", [("../outside/x", CANARY.encode(), None)], r"outside the archive's folder"),
    ("absolute", [("/tmp/biolm-absolute-z", CANARY.encode(), None)], "absolute or Windows path"),
    ("backslash", [("..\\outside\\x", CANARY.encode(), None)], "absolute or Windows path"),
    ("symlink", [zip_symlink("link", "/etc/passwd")], "'link' is a symbolic link"),
    ("symlink then write through it", [zip_symlink("d", "../outside"), ("d/x", CANARY.encode(), None)],
     "'d' is a symbolic link"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "entries", "match"), ZIP_CASES, ids=[c[0] for c in ZIP_CASES])
def test_a_zip_with_a_hostile_entry_is_refused_and_writes_nothing_outside(case, entries, match, sandbox):
    refused(zip_with(sandbox["root"] / "upload.zip", entries), sandbox, match)
    assert not Path("/tmp/biolm-absolute-z").exists()


def test_a_zip_bomb_stops_at_the_expansion_ratio_and_names_its_variable(sandbox):
    archive = zip_bomb(sandbox["root"] / "bomb.zip", 64 * MIB)
    assert archive.stat().st_size < 200_000
    refused(archive, sandbox, r"expands more than 100 times .* \(BIOLM_ARCHIVE_MAX_RATIO\); an archive bomb")
    assert sum(p.stat().st_size for p in sandbox["destination"].rglob("*") if p.is_file()) <= 20 * MIB


def test_a_tar_bomb_stops_at_the_expansion_ratio_while_streaming(sandbox):
    archive = tar_bomb(sandbox["root"] / "bomb.tar.gz", 64 * MIB)
    refused(archive, sandbox, r"expands more than 100 times")


def test_each_size_limit_is_enforced_and_named(sandbox):
    members = [(member(f"f{i}.json"), b"x" * 1000) for i in range(5)]
    archive = tar_with(sandbox["root"] / "many.tar.gz", members)
    refused(archive, sandbox, r"more than 3 files and folders.*BIOLM_ARCHIVE_MAX_FILES", ArchiveLimits(max_members=3))
    sandbox["destination"] = sandbox["root"] / "second"
    refused(archive, sandbox, r"f0.json is larger than 999 bytes.*BIOLM_ARCHIVE_MAX_FILE_BYTES",
            ArchiveLimits(max_member_bytes=999))  # fmt: skip
    sandbox["destination"] = sandbox["root"] / "third"
    refused(archive, sandbox, r"more than 2,500 bytes.*BIOLM_ARCHIVE_MAX_BYTES", ArchiveLimits(max_total_bytes=2500))


def test_a_header_that_lies_about_its_size_is_still_counted_as_it_streams(sandbox):
    """A zip entry whose declared size is small but whose data expands: the bytes written are what count."""
    archive = zip_bomb(sandbox["root"] / "bomb.zip", 8 * MIB)
    limits = ArchiveLimits(max_member_bytes=4 * MIB, max_ratio=1e9)
    refused(archive, sandbox, r"larger than 4,194,304 bytes", limits)


def test_a_nested_archive_is_stored_as_a_file_never_unpacked(sandbox):
    inner = tar_with(sandbox["root"] / "inner.tar.gz", [(member("../outside/x"), CANARY.encode())])
    archive = tar_with(sandbox["root"] / "outer.tar.gz", [(member("inner.tar.gz"), inner.read_bytes())])
    written = unpack(archive, sandbox["destination"], LIMITS, label="outer.tar.gz")
    assert [name for name, _, _ in written.files] == ["inner.tar.gz"]
    assert files_under(sandbox["outside"]) == set()


def test_garbage_and_truncated_archives_are_refused_as_unreadable(sandbox):
    garbage = sandbox["root"] / "garbage.tar.gz"
    garbage.write_bytes(os.urandom(4096))
    refused(garbage, sandbox, "not a readable tar or zip archive|the archive is corrupt")
    good = tar_with(sandbox["root"] / "good.tar.gz", [(member("a.json"), os.urandom(100_000))])
    truncated = sandbox["root"] / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:20_000])
    sandbox["destination"] = sandbox["root"] / "second"
    refused(truncated, sandbox, "not a readable tar or zip archive|the archive is corrupt")


def test_a_stream_from_the_artefact_store_is_unpacked_with_its_size_bounding_the_ratio(sandbox):
    archive = tar_bomb(sandbox["root"] / "bomb.tar.gz", 64 * MIB)
    with archive.open("rb") as handle:
        refused(handle, sandbox, "expands more than", compressed_size=archive.stat().st_size)


def test_a_good_archive_unpacks_regular_files_with_their_digests(sandbox):
    archive = tar_with(sandbox["root"] / "model.tar.gz", [(member("model/config.json"), b"{}"),
                                                          (member("model/vocab.txt"), b"[PAD]\n")])  # fmt: skip
    written = unpack(archive, sandbox["destination"], LIMITS, label="model.tar.gz")
    assert sorted(name for name, _, _ in written.files) == ["model/config.json", "model/vocab.txt"]
    assert (sandbox["destination"] / "model" / "vocab.txt").read_bytes() == b"[PAD]\n"
    assert len(written.content_sha256()) == 64


def test_a_directory_is_copied_without_following_a_symlink(sandbox):
    source = sandbox["root"] / "checkpoint"
    source.mkdir()
    (source / "config.json").write_text("{}")
    (source / "hostname").symlink_to("/etc/hostname")
    with pytest.raises(ArchiveRefused, match=r"hostname is a symbolic link; biolm copies no links.*cp -rL"):
        copy_tree(source, sandbox["destination"], LIMITS, label="checkpoint")
    assert not (sandbox["destination"] / "hostname").exists()
    (source / "hostname").unlink()
    (source / "sub").symlink_to(sandbox["outside"], target_is_directory=True)
    with pytest.raises(ArchiveRefused, match="sub is a symbolic link"):
        copy_tree(source, sandbox["root"] / "second", LIMITS, label="checkpoint")


def test_a_fifo_in_a_directory_is_refused_without_blocking(sandbox):
    source = sandbox["root"] / "checkpoint"
    source.mkdir()
    os.mkfifo(source / "pipe")
    with pytest.raises(ArchiveRefused, match="pipe is not a regular file"):
        copy_tree(source, sandbox["destination"], LIMITS, label="checkpoint")


def test_limits_come_from_their_environment_variables_and_bad_values_are_named():
    from biolm.intake_limits import CheckpointLimits, LimitSettingError

    limits = ArchiveLimits.from_env({"BIOLM_ARCHIVE_MAX_BYTES": "1_000", "BIOLM_ARCHIVE_MAX_RATIO": "2.5"})
    assert limits.max_total_bytes == 1000 and limits.max_ratio == 2.5 and limits.max_members == 2000
    assert CheckpointLimits.from_env({"BIOLM_CHECKPOINT_MAX_LAYERS": "12"}).max_layers == 12
    with pytest.raises(LimitSettingError, match="BIOLM_ARCHIVE_MAX_FILES='many' is not a whole number"):
        ArchiveLimits.from_env({"BIOLM_ARCHIVE_MAX_FILES": "many"})
    with pytest.raises(LimitSettingError, match="BIOLM_CHECKPOINT_MAX_PARAMETERS='-1' must be positive"):
        CheckpointLimits.from_env({"BIOLM_CHECKPOINT_MAX_PARAMETERS": "-1"})


def test_the_destination_must_be_fresh(sandbox):
    sandbox["destination"].mkdir(parents=True)
    (sandbox["destination"] / "left-over").write_text("x")
    archive = tar_with(sandbox["root"] / "a.tar.gz", [(member("a.json"), b"{}")])
    with pytest.raises(ValueError, match="must be empty"):
        unpack(archive, sandbox["destination"], LIMITS, label="a.tar.gz")


def test_an_archive_given_as_an_open_file_is_unpacked_the_same_way(sandbox):
    archive = tar_with(sandbox["root"] / "a.tar.gz", [(member("a.json"), b"{}")])
    stream = io.BytesIO(archive.read_bytes())
    written = unpack(stream, sandbox["destination"], LIMITS, label="a.tar.gz", compressed_size=len(stream.getvalue()))
    assert written.files[0][0] == "a.json"


# ---------------------------------------------------------------------------
# Memory: what tarfile and zipfile would read into memory is refused from its declared size


@pytest.mark.parametrize("case", list(EXTENDED_HEADERS))
def test_a_tar_with_a_256_mib_extended_header_is_refused_before_it_is_read(case, sandbox, hostile_headers):
    """A GNU long name or link, or a pax header, declaring 256 MiB (a 255 KiB .tar.gz): tarfile would hold it whole."""
    archive = hostile_headers[case]
    assert archive.stat().st_size < 300 * 1024
    kind = {"long name": "GNU long-name", "long link": "GNU long-link", "pax": "pax", "pax global": "pax global"}[case]
    refused(archive, sandbox, rf"upload.tar.gz: member #1 has a {kind} header of 268,435,456 bytes, over the 65,536 "
            r"tar headers may hold, refused unread; archive the checkpoint again with names under 1,024")  # fmt: skip
    sandbox["destination"] = sandbox["root"] / "second"
    peak = peak_allocated(lambda: unpack(archive, sandbox["destination"], LIMITS, label="upload.tar.gz"))
    assert peak < 4 * MIB, f"refusing the header held {peak:,} bytes"


def test_headers_under_the_bound_still_give_long_names_and_a_chain_of_them_is_bounded_in_all(sandbox):
    fine = tar_with_extended_header(sandbox["root"] / "fine.tar.gz", b"L", 200, then="ignored")
    written = unpack(fine, sandbox["destination"], LIMITS, label="fine.tar.gz")
    assert written.files[0][0] == "a" * 200  # the long name replaced the member's own
    chain = [(member(f"model/{n:03d}-" + "x" * 200 + ".json"), b"{}") for n in range(3)]
    for info, _ in chain:
        info.pax_headers = {"comment": "c" * 40_000}  # 40 KB each, fine alone, 120 KB over one archive's members
    archive = tar_with(sandbox["root"] / "chain.tar.gz", chain)
    written = unpack(archive, sandbox["root"] / "second", LIMITS, label="chain.tar.gz")  # one member's headers reset
    assert len(written.files) == 3
    body = " comment=" + "g" * 40_000 + "\n"
    record = f"{len(body) + 5}{body}".encode()  # a pax record: its own length (5 digits), then the keyword
    glob = member("global", tarfile.XGLTYPE)
    globals_ = tar_with(sandbox["root"] / "globals.tar.gz", [(glob, record), (glob, record), (member("a.json"), b"{}")])
    sandbox["destination"] = sandbox["root"] / "third"
    refused(globals_, sandbox, r"member #1 has pax global headers of [\d,]+ bytes in all, over the 65,536")


def test_a_gnu_sparse_member_is_refused_before_its_map_is_read(sandbox):
    info = member("model.safetensors", tarfile.GNUTYPE_SPARSE)
    archive = tar_with(sandbox["root"] / "sparse.tar", [(info, b"x" * 10)], mode="w")
    refused(archive, sandbox, r"member 'model.safetensors' is a sparse file; a checkpoint holds regular files")


def test_a_bzip2_tar_bomb_is_inflated_only_as_far_as_it_is_read(sandbox):
    """tarfile's own stream mode inflates a whole 16 KiB read of bzip2: 1.7 GB for this 860-byte archive."""
    archive = tar_bz2_bomb(sandbox["root"] / "bomb.tar.gz", 1 << 30)
    assert archive.stat().st_size < 2000
    refused(archive, sandbox, r"expands more than 100 times")
    sandbox["destination"] = sandbox["root"] / "second"
    peak = peak_allocated(lambda: unpack(archive, sandbox["destination"], LIMITS, label="bomb.tar.gz"))
    assert peak < 16 * MIB, f"the bzip2 bomb held {peak:,} bytes"


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_an_archive_of_more_members_than_the_limit_is_refused_with_flat_memory(kind, sandbox):
    build = tar_with_many_members if kind == "tar" else zip_with_many_members
    archive = build(sandbox["root"] / f"many.{'tar.gz' if kind == 'tar' else 'zip'}", 50_000)
    match = r"more than 2,000 files and folders" if kind == "tar" else r"its zip directory lists 50,000 files in"
    refused(archive, sandbox, match)
    sandbox["destination"] = sandbox["root"] / "second"
    peak = peak_allocated(lambda: unpack(archive, sandbox["destination"], LIMITS, label="many"))
    assert peak < 8 * MIB, f"{kind} with 50,000 members held {peak:,} bytes"


def test_a_zip_entry_compressed_with_bzip2_is_refused_since_zipfile_inflates_it_unbounded(sandbox):
    import zipfile

    archive = sandbox["root"] / "bz.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_BZIP2) as out:
        out.writestr("config.json", b"{}")
    refused(archive, sandbox, r"member 'config.json' is compressed with method 12, which biolm does not read")


def test_the_expansion_ratio_is_checked_for_each_member_so_real_data_cannot_dilute_a_bomb(sandbox):
    noise = os.urandom(40 * MIB)  # incompressible, like weights: the archive's overall ratio stays near 1.5
    archive = sandbox["root"] / "diluted.zip"
    zip_with(archive, [("model.safetensors", noise, None), ("extra.json", bytes(32 * MIB), None)])
    refused(archive, sandbox, r"extra.json expands more than 100 times the [\d,]+ bytes it takes in the archive, the "
            r"limit for each file \(BIOLM_ARCHIVE_MAX_RATIO\)")  # fmt: skip


def test_the_default_archive_limit_follows_the_parameter_cap_at_four_bytes_a_parameter():
    from biolm.intake_limits import CheckpointLimits, largest_checkpoint

    assert CheckpointLimits().max_parameters == 10_000_000_000
    assert LIMITS.max_total_bytes == largest_checkpoint(10_000_000_000) == 40_880_803_848  # about 41 GB
    halved = ArchiveLimits.from_env({"BIOLM_CHECKPOINT_MAX_PARAMETERS": "5_000_000_000"})
    assert halved.max_total_bytes == 20_880_803_848 and halved.max_member_bytes == 20_008_388_616
    assert ArchiveLimits.from_env({"BIOLM_ARCHIVE_MAX_BYTES": "1000"}).max_total_bytes == 1000


def test_the_allow_list_knows_each_kind_where_it_may_be_and_what_an_operator_adds():
    from pathlib import PurePosixPath as P

    from biolm.checkpoint_files import CheckpointFiles
    from biolm.intake_limits import LimitSettingError

    files = CheckpointFiles()
    kinds = {name: getattr(files.kind_of(P(name)), "name", None) for name in [
        "model-00001-of-00002.safetensors", "sub/model.safetensors", "1_Pooling/config.json", "extra/config.json",
        "2_Dense/vocab.txt", "spiece.model", "LICENSE", "README.md", "__MACOSX/m/._config.json", "notes.txt", "state",
    ]}  # fmt: skip
    assert kinds == {
        "model-00001-of-00002.safetensors": "a weights file", "sub/model.safetensors": None,
        "1_Pooling/config.json": "a config", "extra/config.json": None, "2_Dense/vocab.txt": "a tokenizer file",
        "spiece.model": "a tokenizer file", "LICENSE": "a text document", "README.md": "a text document",
        "__MACOSX/m/._config.json": "an archiver's file", "notes.txt": None, "state": None,
    }  # fmt: skip
    assert files.kind_in_archive(P("model/1_Pooling/config.json")).name == "a config"  # under the archive's folder
    assert files.unlisted([P("config.json"), P("model/config.json")]) == P("model/config.json")
    operator = CheckpointFiles.from_env({"BIOLM_CHECKPOINT_EXTRA_FILES": "2_Dense/*, *.tiktoken",
                                         "BIOLM_CHECKPOINT_EXTRA_FILE_BYTES": "1000",
                                         "BIOLM_CHECKPOINT_MAX_PARAMETERS": "1000"})  # fmt: skip
    assert operator.kind_of(P("2_Dense/model.safetensors")).max_bytes == 1000
    assert operator.kind_of(P("model.safetensors")).max_bytes == 8 + 8 * MIB + 4 * 1000
    with pytest.raises(LimitSettingError, match="BIOLM_CHECKPOINT_EXTRA_FILE_BYTES='lots' is not a whole number"):
        CheckpointFiles.from_env({"BIOLM_CHECKPOINT_EXTRA_FILE_BYTES": "lots"})
