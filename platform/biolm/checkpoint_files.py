"""What a Hugging Face encoder checkpoint may hold: an allow-list by kind, each kind with a size cap of its own.

A checkpoint needs weights, configs, a tokenizer and perhaps a model card; nothing else. A file of
any other kind is refused before a byte of it is written (:mod:`biolm.archives` asks here for each
member), so a real checkpoint cannot carry a 3 GB file of zeros named ``notes.txt``, a pickle
without a suffix, or code. Each kind is bounded by what it is: weights by the parameters they may
hold (:func:`~biolm.intake_limits.largest_weights_file`; their safetensors headers are then checked
against the parameter cap), a config by 1 MiB, a tokenizer file by 64 MiB, a document by 1 MiB.

The kinds, each at the checkpoint's top level or, where it says so, in a sentence-transformers
module folder such as ``1_Pooling/``:

* weights: ``*.safetensors`` at the top level, and their index ``model.safetensors.index.json``;
* JSON configs: ``*.json``, top level or module folder;
* tokenizer files: :data:`TOKENIZER_FILES`, top level or module folder;
* text documents: ``README.md``, ``LICENSE``, ``.gitattributes`` and the like (:data:`DOCUMENTS`);
* biolm's own pretraining reports, ``pretraining.json`` and ``loss.json``;
* what archivers add beside the content (``__MACOSX/``, ``.DS_Store``, macOS's ``._`` files), small.

An operator allows more with ``BIOLM_CHECKPOINT_EXTRA_FILES``: comma-separated glob patterns
(``fnmatch``, on the path inside the checkpoint, ``*`` crossing ``/``), each matching file capped
at ``BIOLM_CHECKPOINT_EXTRA_FILE_BYTES`` (64 MiB unless set).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Self

from biolm.intake_limits import (
    CONFIG_FILE_BYTES,
    DOCUMENT_FILE_BYTES,
    REPORT_FILE_BYTES,
    TOKENIZER_FILE_BYTES,
    CheckpointLimits,
    LimitSettingError,
    largest_weights_file,
)

TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.txt",
    "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
)  # fmt: skip
WEIGHT_INDEX = "model.safetensors.index.json"
REPORTS = ("pretraining.json", "loss.json")
DOCUMENTS = re.compile(
    r"(?i)(readme|licen[cs]e|notice|copying|authors|citation|model_card|use_policy)(\.(md|txt|rst|cff))?"
    r"|\.gitattributes|\.gitignore"
)
# sentence-transformers saves each module of a pipeline in a numbered folder: 1_Pooling, 2_Normalize, 2_Dense ...
MODULE_FOLDER = re.compile(r"\d+_[A-Za-z][\w.-]*")
ARCHIVER_FILES = (".DS_Store",)
ARCHIVER_FOLDER = "__MACOSX"

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib", ".npy", ".npz")
OTHER_WEIGHT_SUFFIXES = (".h5", ".msgpack", ".onnx", ".gguf", ".keras")
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd", ".sh")
SAFE_SERIALISATION = "save it again with save_pretrained(..., safe_serialization=True) and leave the pickle out"
WHAT_A_CHECKPOINT_HOLDS = (
    "a checkpoint holds safetensors weights, JSON configs, tokenizer files and short text documents"
)
EXTRA_VARIABLE = "BIOLM_CHECKPOINT_EXTRA_FILES"
EXTRA_BYTES_VARIABLE = "BIOLM_CHECKPOINT_EXTRA_FILE_BYTES"


@dataclass(frozen=True)
class FileKind:
    """One kind of file a checkpoint may hold, and the most bytes one such file may have."""

    name: str  # as a message says it: "a config", "a tokenizer file"
    max_bytes: int
    why: str  # what sets the cap, for the message that names it


@dataclass(frozen=True)
class CheckpointFiles:
    """The allow-list and its caps; ``kind_of`` says what a file is, ``refusal`` why one is not allowed."""

    max_weights_bytes: int = largest_weights_file(CheckpointLimits().max_parameters)
    max_config_bytes: int = CONFIG_FILE_BYTES
    max_tokenizer_bytes: int = TOKENIZER_FILE_BYTES
    max_document_bytes: int = DOCUMENT_FILE_BYTES
    max_report_bytes: int = REPORT_FILE_BYTES
    extra_patterns: tuple[str, ...] = ()
    max_extra_bytes: int = TOKENIZER_FILE_BYTES

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Self:
        """The allow-list an operator set: extra patterns, and weights bounded by the configured parameter cap."""
        limits = CheckpointLimits.from_env(environ)
        patterns = tuple(p.strip() for p in environ.get(EXTRA_VARIABLE, "").split(",") if p.strip())
        raw = environ.get(EXTRA_BYTES_VARIABLE, "").strip()
        extra_bytes = TOKENIZER_FILE_BYTES
        if raw:
            try:
                extra_bytes = int(raw.replace("_", ""))
            except ValueError:
                raise LimitSettingError(f"{EXTRA_BYTES_VARIABLE}={raw!r} is not a whole number") from None
            if extra_bytes <= 0:
                raise LimitSettingError(f"{EXTRA_BYTES_VARIABLE}={raw!r} must be positive")
        weights = largest_weights_file(limits.max_parameters, limits.max_safetensors_header_bytes)
        return cls(max_weights_bytes=weights, max_config_bytes=limits.max_config_bytes, extra_patterns=patterns,
                   max_extra_bytes=extra_bytes)  # fmt: skip

    def kind_of(self, name: PurePosixPath) -> FileKind | None:
        """The kind of the file at ``name`` inside the checkpoint's own folder, or None when it may not be there."""
        text, parts = name.as_posix(), name.parts
        if any(fnmatchcase(text, pattern) for pattern in self.extra_patterns):
            return FileKind("a file BIOLM_CHECKPOINT_EXTRA_FILES allows", self.max_extra_bytes, EXTRA_BYTES_VARIABLE)
        if parts[0] == ARCHIVER_FOLDER or parts[-1] in ARCHIVER_FILES or parts[-1].startswith("._"):
            return FileKind("an archiver's file", self.max_document_bytes, "what a document may hold")
        top = len(parts) == 1
        if not top and not (len(parts) == 2 and MODULE_FOLDER.fullmatch(parts[0])):
            return None
        file = parts[-1]
        if top and file.endswith(".safetensors"):
            return FileKind("a weights file", self.max_weights_bytes, "what the parameter cap allows at 4 bytes each "
                            "(BIOLM_CHECKPOINT_MAX_PARAMETERS)")  # fmt: skip
        if file in TOKENIZER_FILES or (top and file == WEIGHT_INDEX):
            return FileKind("a tokenizer file", self.max_tokenizer_bytes, "what a tokenizer file may hold")
        if top and file in REPORTS:
            return FileKind("a pretraining report", self.max_report_bytes, "what a report may hold")
        if file.endswith(".json"):
            return FileKind("a config", self.max_config_bytes, "what a config may hold")
        if DOCUMENTS.fullmatch(file):
            return FileKind("a text document", self.max_document_bytes, "what a document may hold")
        return None

    def kind_in_archive(self, name: PurePosixPath) -> FileKind | None:
        """The kind of an archive member, whose checkpoint may sit in one top folder (``model/config.json``).

        The exact check, once the checkpoint's folder is known, is :meth:`unlisted`.
        """
        kind = self.kind_of(name)
        if kind is None and len(name.parts) > 1:
            kind = self.kind_of(PurePosixPath(*name.parts[1:]))
        return kind

    def unlisted(self, names: list[PurePosixPath]) -> PurePosixPath | None:
        """The first of ``names`` (paths inside the checkpoint's folder) that the allow-list does not hold."""
        return next((name for name in names if self.kind_of(name) is None), None)

    def refusal(self, shown: str) -> str:
        """Why the file ``shown`` may not be in a checkpoint, and the fix: one sentence (after the archive's name)."""
        suffix = PurePosixPath(shown).suffix.lower()
        if suffix in PICKLE_SUFFIXES:
            return (f"{shown}: pickled files are refused, because loading a pickle runs code; biolm reads safetensors "
                    f"only: {SAFE_SERIALISATION}")  # fmt: skip
        if suffix in OTHER_WEIGHT_SUFFIXES:
            return (f"{shown}: biolm reads weights in safetensors only; remove it, or convert the model to "
                    "model.safetensors if it holds no safetensors weights")  # fmt: skip
        if suffix in CODE_SUFFIXES:
            return f"{shown}: a checkpoint may hold no code (biolm never runs a submitter's code); remove it"
        return (
            f"{shown} is not a file a checkpoint holds; remove it ({WHAT_A_CHECKPOINT_HOLDS}, at the top level or in "
            f"a sentence-transformers module folder such as 1_Pooling/; {EXTRA_VARIABLE} allows more)"
        )
