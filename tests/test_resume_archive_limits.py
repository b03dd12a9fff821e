"""A pretraining job's own resume archive is held to its model's size, not to a submitted checkpoint's cap."""

from __future__ import annotations

from contract_documents import pretrain_spec

from biolm.intake_limits import RESUME_BYTES_PER_PARAMETER, ArchiveLimits, resume_archive_limits
from biolm.memory_plan import recipe_dims
from workers.runner.execution import resume_limits

GATORTRON_LARGE = {"architecture": "megatron-bert:gatortron-large"}


def test_gatortron_larges_resume_archive_fits_its_jobs_limits_but_not_a_submitted_checkpoints():
    parameters = recipe_dims(GATORTRON_LARGE).pretraining_parameter_count()
    archive = RESUME_BYTES_PER_PARAMETER * parameters  # fp32 weights and AdamW's two moments, in shards
    assert archive > ArchiveLimits().max_total_bytes  # the submission limit (4 bytes a parameter) refuses it
    limits = resume_limits(pretrain_spec("gatortron", settings=GATORTRON_LARGE, gpus=8, nodes=2))
    assert limits.max_total_bytes >= archive and limits.max_member_bytes >= archive
    assert limits.max_members >= 2 * 16  # a shard and an RNG file for each of 16 ranks
    assert limits.max_ratio == ArchiveLimits().max_ratio  # a bomb is still refused for its ratio


def test_a_small_models_resume_archive_keeps_the_submission_limits_which_already_hold_it():
    tiny = resume_limits(pretrain_spec("tiny"))
    assert tiny == ArchiveLimits.from_env()
    assert resume_archive_limits(10**6, 1).max_total_bytes == ArchiveLimits.from_env().max_total_bytes


def test_a_recipe_this_worker_cannot_size_keeps_the_submission_limits():
    unknown = pretrain_spec("tiny", settings={"architecture": "no-such-family:huge"})
    assert resume_limits(unknown) == ArchiveLimits.from_env()
