"""Check a submitted checkpoint completely before anything is stored, loaded or run.

The platform receives checkpoints from people it does not know, and everything a worker will do
with one is decided here, at submission, where a refusal costs nothing:

* **no code.** Weights are safetensors only: a ``.bin``/``.pt``/``.ckpt`` file is a pickle, and
  unpickling runs whatever the pickle says. A file that *is* a pickle (or an archive) under any
  name is refused by its first bytes. Any ``auto_map`` in a config, or any ``.py`` file, would
  let transformers offer to run the submitter's code (``trust_remote_code``): refused too.
* **a config that builds.** It parses (within a size and nesting bound), names a ``model_type``
  that a loaded architecture plugin registers, and has sizes that are positive, consistent
  (heads divide the hidden size) and under :class:`~biolm.intake_limits.CheckpointLimits`, so a
  ten-line config cannot ask a worker for 122 GB.
* **weights that match it.** Every safetensors header is read and checked against its file
  (:mod:`workers.engine.safetensors_headers`); the encoder the config describes is built on the
  meta device and each of its tensors must be in the weights with the same shape.

Each refusal is one sentence that names the file and the fix.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from biolm.checkpoint_files import CODE_SUFFIXES, OTHER_WEIGHT_SUFFIXES, PICKLE_SUFFIXES, SAFE_SERIALISATION
from biolm.intake_limits import CheckpointLimits
from workers.engine.safetensors_headers import SafetensorsHeaderError, TensorEntry, read_header

# First bytes that give a file away whatever its name: pickles (protocols 2-5) and archives.
SIGNATURES = (
    (b"\x80\x02", "a pickle"), (b"\x80\x03", "a pickle"), (b"\x80\x04", "a pickle"), (b"\x80\x05", "a pickle"),
    (b"PK\x03\x04", "a zip archive (a torch.save file is one)"), (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"), (b"\xfd7zXZ\x00", "an xz archive"), (b"(\xb5/\xfd", "a zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"), (b"Rar!", "a rar archive"),
)  # fmt: skip
CONFIGS_WITH_CODE = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")
# Raw config keys checked before transformers sees the config: name, limit field, minimum.
SIZE_KEYS = (
    ("hidden_size", "max_hidden_size", 1),
    ("num_hidden_layers", "max_layers", 1),
    ("num_attention_heads", "max_attention_heads", 1),
    ("intermediate_size", "max_intermediate_size", 1),
    ("vocab_size", "max_vocab_size", 1),
    ("max_position_embeddings", "max_positions", 1),
    ("type_vocab_size", "max_vocab_size", 0),
    ("embedding_size", "max_hidden_size", 1),
)


class CheckpointRefused(ValueError):
    """A checkpoint biolm will not store or load; the message names the file and what to do."""


@dataclass(frozen=True)
class CheckedCheckpoint:
    """What the checks learnt: the built config and the parameters it and the weights hold."""

    config: object  # a transformers PretrainedConfig
    parameter_count: int
    weights_parameter_count: int


def check_submitted_checkpoint(
    directory: Path, limits: CheckpointLimits, *, known_model_types: set[str]
) -> CheckedCheckpoint:
    """Refuse ``directory`` unless it is a safe, consistent Hugging Face checkpoint biolm can evaluate."""
    from workers.engine.preflight import checkpoint_problem

    directory = Path(directory)
    files = sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink())
    for path in files:
        _refuse_code_and_pickles(directory, path)
    problem = checkpoint_problem(directory)
    if problem is not None:
        raise CheckpointRefused(problem)
    raw = _read_json(directory / "config.json", limits.max_config_bytes)
    for name in CONFIGS_WITH_CODE[1:]:  # a tokenizer's config may list every added token: allow it more room
        if (directory / name).is_file():
            _read_json(directory / name, 32 * limits.max_config_bytes)
    config = _build_config(raw, limits, known_model_types)
    model = _meta_encoder(config)
    parameter_count = sum(p.numel() for p in model.parameters())
    if parameter_count > limits.max_parameters:
        raise CheckpointRefused(
            f"config.json describes {parameter_count:,} parameters, over the limit of {limits.max_parameters:,} "
            f"({limits.variable('max_parameters')})"
        )
    weights = _weights(directory, limits)
    weights_count = sum(t.numel for t in weights.values())
    if weights_count > limits.max_parameters:  # the config's count is checked above; extra tensors count too
        raise CheckpointRefused(
            f"the safetensors headers declare {weights_count:,} parameters, over the limit of "
            f"{limits.max_parameters:,} ({limits.variable('max_parameters')}); remove tensors the model does not use"
        )
    _match_weights(model, weights)
    return CheckedCheckpoint(config, parameter_count, weights_count)


def _refuse_code_and_pickles(directory: Path, path: Path) -> None:
    shown = path.relative_to(directory).as_posix()
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise CheckpointRefused(
            f"{shown}: pickled files are refused, because loading a pickle runs code; biolm reads safetensors only: "
            f"{SAFE_SERIALISATION}"
        )
    if suffix in OTHER_WEIGHT_SUFFIXES:
        raise CheckpointRefused(f"{shown}: biolm reads weights in safetensors only; convert it to model.safetensors")
    if suffix in CODE_SUFFIXES:
        raise CheckpointRefused(
            f"{shown}: a checkpoint may hold no code (biolm never runs a submitter's code); remove it"
        )
    if suffix == ".safetensors":
        return  # it opens with its header's length, which may look like anything; its header is checked instead
    with path.open("rb") as handle:
        head = handle.read(262)
    for signature, kind in SIGNATURES:
        if head.startswith(signature):
            raise CheckpointRefused(
                f"{shown}: is {kind}; biolm unpacks one archive and reads no pickle, so a checkpoint holds "
                "safetensors weights, JSON and tokenizer files only"
            )
    if head[257:262] == b"ustar":
        raise CheckpointRefused(f"{shown}: is a tar archive; biolm unpacks one archive, not archives inside it")


def _read_json(path: Path, max_bytes: int) -> dict:
    if path.stat().st_size > max_bytes:
        raise CheckpointRefused(
            f"{path.name}: {path.stat().st_size:,} bytes is over the {max_bytes:,} a config may have"
        )
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except RecursionError:
        raise CheckpointRefused(f"{path.name}: nests too deeply to be a config") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointRefused(
            f"{path.name}: is not valid JSON ({exc}); save the config with save_pretrained"
        ) from None
    if not isinstance(value, dict):
        raise CheckpointRefused(f"{path.name}: must be a JSON object, not a {type(value).__name__}")
    if "auto_map" in value:
        raise CheckpointRefused(
            f"{path.name}: has an auto_map, which asks to run code shipped with the checkpoint; biolm never runs a "
            "submitter's code: use a model_type that transformers provides and remove auto_map"
        )
    return value


# transformers resolves its names lazily, and two threads resolving the first one at once can see
# a half-initialised module ("cannot import name 'CONFIG_MAPPING'"): the demo's threaded server
# takes two first submissions at once. One lock around the first import makes it whole.
_TRANSFORMERS_IMPORT = threading.Lock()


def _build_config(raw: dict, limits: CheckpointLimits, known_model_types: set[str]):
    with _TRANSFORMERS_IMPORT:
        from transformers import CONFIG_MAPPING

    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in known_model_types or model_type not in CONFIG_MAPPING:
        known = ", ".join(sorted(known_model_types & set(CONFIG_MAPPING))) or "none (run manage.py sync_plugins)"
        raise CheckpointRefused(
            f"config.json: model_type {str(model_type)[:80]!r} is not an architecture biolm evaluates; known: {known} "
            "(a plugin can add one)"
        )
    for key, limit_field, minimum in SIZE_KEYS:
        if key in raw:
            _check_size(key, raw[key], minimum, getattr(limits, limit_field), limits.variable(limit_field))
    try:
        config = CONFIG_MAPPING[model_type].from_dict(raw)
    except Exception as exc:
        raise CheckpointRefused(
            f"config.json: transformers cannot build a {model_type} config from it: {exc}"
        ) from None
    for key, limit_field, minimum in SIZE_KEYS:
        value = getattr(config, key, None)
        if value is not None:
            _check_size(key, value, minimum, getattr(limits, limit_field), limits.variable(limit_field))
    hidden, heads = getattr(config, "hidden_size", None), getattr(config, "num_attention_heads", None)
    if hidden and heads and hidden % heads:
        raise CheckpointRefused(
            f"config.json: hidden_size {hidden} is not a multiple of num_attention_heads {heads}; fix one of them"
        )
    return config


def _check_size(key: str, value: object, minimum: int, maximum: int, variable: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CheckpointRefused(f"config.json: {key} must be a whole number, not {str(value)[:40]!r}")
    if value < minimum:
        raise CheckpointRefused(f"config.json: {key} is {value}; it must be at least {minimum}")
    if value > maximum:
        raise CheckpointRefused(f"config.json: {key} is {value:,}, over the limit of {maximum:,} ({variable})")


def _meta_encoder(config):
    import torch

    with _TRANSFORMERS_IMPORT:
        from transformers import AutoModel

    try:
        with torch.device("meta"):
            return AutoModel.from_config(config)
    except Exception as exc:
        raise CheckpointRefused(f"config.json: the model it describes cannot be built: {exc}") from None


def _weights(directory: Path, limits: CheckpointLimits) -> dict[str, TensorEntry]:
    shards = sorted(directory.glob("*.safetensors"))
    if not shards:
        raise CheckpointRefused(f"no model.safetensors: biolm reads weights in safetensors only; {SAFE_SERIALISATION}")
    _check_index(directory, shards)
    tensors: dict[str, TensorEntry] = {}
    for shard in shards:
        try:
            for tensor in read_header(shard, limits.max_safetensors_header_bytes):
                tensors[tensor.name] = tensor
        except (OSError, SafetensorsHeaderError) as exc:
            raise CheckpointRefused(f"{exc}; upload the file again, or save it again with save_pretrained") from None
    return tensors


def _check_index(directory: Path, shards: list[Path]) -> None:
    index = directory / "model.safetensors.index.json"
    if not index.is_file():
        return
    raw = _read_json(index, 64 << 20)
    weight_map = raw.get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointRefused("model.safetensors.index.json: has no weight_map")
    present = {shard.name for shard in shards}
    missing = sorted({str(name) for name in weight_map.values()} - present)
    if missing:
        raise CheckpointRefused(
            f"model.safetensors.index.json names shards that are not there: {', '.join(missing[:5])}"
        )


def _match_weights(model, weights: dict[str, TensorEntry]) -> None:
    """Each tensor of the encoder the config describes is in the weights, with its shape (a pooler may lack)."""
    prefix = getattr(model, "base_model_prefix", "")
    normalised = {_modern_name(name): tensor for name, tensor in weights.items()}
    expected = dict(model.state_dict(keep_vars=True).items())
    missing, missing_numel, total = [], 0, 0
    for name, tensor in expected.items():
        if name.endswith(("position_ids", "token_type_ids")):
            continue  # buffers transformers recreates
        shape = tuple(tensor.shape)
        total += tensor.numel()
        found = normalised.get(name) or normalised.get(f"{prefix}.{name}")
        if found is None:
            missing.append(name)
            missing_numel += tensor.numel()
        elif found.shape != shape:
            raise CheckpointRefused(
                f"model.safetensors: {found.name} has shape {list(found.shape)}, while config.json implies "
                f"{list(shape)}: the config does not describe these weights"
            )
    if missing and missing_numel > 0.1 * total:
        raise CheckpointRefused(
            f"model.safetensors lacks {missing_numel:,} of the {total:,} parameters config.json describes "
            f"(for example {', '.join(missing[:3])}): are the weights of another model?"
        )


def _modern_name(name: str) -> str:
    """Old BERT checkpoints name LayerNorm parameters gamma and beta; transformers renames them on load."""
    if name.endswith(".gamma"):
        return name[: -len(".gamma")] + ".weight"
    if name.endswith(".beta"):
        return name[: -len(".beta")] + ".bias"
    return name
