"""The job contract: one typed, versioned document per job kind, and the results document that answers it.

Django-free and torch-free, so the web process checks a spec where it is built, the GPU worker and
the engine read the same document, and a plugin author's tools can too. ``docs/architecture.md``
shows one spec of each kind and a results document.
"""

from biolm.contract.code import (
    CodeMismatch,
    CodeMissing,
    CodePin,
    PinCheck,
    check,
    code_here,
    compare,
    mismatch_message,
    other_code_words,
    pins_for,
)
from biolm.contract.errors import ContractError
from biolm.contract.jobs import (
    PRETRAIN_SPEC_VERSION,
    SPEC_VERSION,
    Artefact,
    FetchJob,
    FinetuneJob,
    JobSpec,
    ModelInput,
    PretrainJob,
    ScoreJob,
    parse_job_spec,
)
from biolm.contract.overrides import Overrides
from biolm.contract.results import RESULTS_VERSION, ResultsDocument, RunRecord
from biolm.contract.runs import parse_run_key, run_key
from biolm.contract.slices import SLICE_FILE, Slice
from biolm.contract.task_options import TaskOptions

__all__ = [
    "PRETRAIN_SPEC_VERSION",
    "RESULTS_VERSION",
    "SLICE_FILE",
    "SPEC_VERSION",
    "Artefact",
    "CodeMismatch",
    "CodeMissing",
    "CodePin",
    "ContractError",
    "FetchJob",
    "FinetuneJob",
    "JobSpec",
    "ModelInput",
    "Overrides",
    "PinCheck",
    "PretrainJob",
    "ResultsDocument",
    "RunRecord",
    "ScoreJob",
    "Slice",
    "TaskOptions",
    "check",
    "code_here",
    "compare",
    "mismatch_message",
    "other_code_words",
    "parse_job_spec",
    "parse_run_key",
    "pins_for",
    "run_key",
]
