"""Resumable pretraining state on ``torch.distributed.checkpoint`` (DCP): every rank writes its own shard.

A checkpoint directory holds:

* ``shards/``: the model (a distillation projection too) and AdamW's states, written by DCP, each rank
  its shard (FSDP) or, for replicated tensors (DDP, one process), one copy among them. Keys are the
  parameters' names, not their positions or the ranks', so a run saved by 4 processes resumes on 2 or
  1 (and DDP's on FSDP's): DCP reshards on load;
* ``rng-<rank>.pt``: each rank's RNG states (dropout draws from them);
* ``scheduler.pt``, ``state.json`` (step, processes, parallelism, masking scheme) and ``loss.json``
  (the curve up to the step; the worker reads its last entry to say which step an attempt resumes at).

It is written to ``checkpoint.tmp`` and swapped in by rank 0 after every rank has finished, so a kill
never leaves half a checkpoint. At the same number of processes a resume is exact (every RNG state
comes back); at another number the RNG states cannot map rank to rank, so dropout's draws differ from
the uninterrupted run's (the masks do not: they are a function of seed, step and row).

DCP's ``.metadata`` file is a pickle. A checkpoint comes back through the platform, and unpickling
arbitrary objects could run code, so it is read by :func:`safe_reader`, which admits DCP's own metadata
classes and torch's sizes and dtypes, and nothing else.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import random
import shutil
from pathlib import Path

import numpy as np
import torch

from workers.engine.pretrain.masking import MASKING_SCHEME

CHECKPOINT = "checkpoint"
STATE = "state.json"
LAYOUT = "dcp"


def rng_states() -> dict:
    kind, keys, position, has_gauss, cached = np.random.get_state()
    # Plain lists and numbers, not a numpy array: the file then loads with weights_only=True.
    numpy_state = [kind, keys.tolist(), int(position), int(has_gauss), float(cached)]
    states = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    kind, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def save_checkpoint(
    directory: Path,
    wrapped: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler,
    step: int,
    log: list[dict],
    *,
    rank: int = 0,
    world: int = 1,
    parallelism: str = "ddp",
) -> None:
    """Every rank writes its shard and RNG states into a fresh directory; rank 0 then swaps it in."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    staging = directory.with_name(directory.name + ".tmp")
    if rank == 0:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    _barrier(world)
    model_state, optimizer_state = get_state_dict(wrapped, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=staging / "shards")
    torch.save(rng_states(), staging / f"rng-{rank}.pt")
    if rank == 0:
        torch.save({"scheduler": scheduler.state_dict()}, staging / "scheduler.pt")
        state = {"layout": LAYOUT, "step": step, "processes": world, "parallelism": parallelism,
                 "masking_scheme": MASKING_SCHEME}  # fmt: skip
        (staging / STATE).write_text(json.dumps(state), encoding="utf-8")
        (staging / "loss.json").write_text(json.dumps(log), encoding="utf-8")
    _barrier(world)
    if rank == 0:
        previous = directory.with_name(directory.name + ".old")
        shutil.rmtree(previous, ignore_errors=True)
        if directory.exists():
            os.replace(directory, previous)
        os.replace(staging, directory)
        shutil.rmtree(previous, ignore_errors=True)
    _barrier(world)


def read_state(directory: Path) -> dict:
    """``state.json`` of a checkpoint, refusing one this engine cannot resume, with what to do instead."""
    if not (directory / STATE).is_file():
        if (directory / "state.pt").is_file():
            raise ValueError(
                f"{directory}: a checkpoint of a biolm from before sharded checkpoints (one state.pt, masking "
                f"scheme 1); this engine writes and resumes torch.distributed.checkpoint shards with masking "
                f"scheme {MASKING_SCHEME}: start the run again without --resume"
            )
        raise ValueError(f"{directory}: no {STATE}; not a biolm pretraining checkpoint")
    state = json.loads((directory / STATE).read_text(encoding="utf-8"))
    if state.get("layout") != LAYOUT or state.get("masking_scheme") != MASKING_SCHEME:
        raise ValueError(
            f"{directory}: layout {state.get('layout')!r}, masking scheme {state.get('masking_scheme')!r}; this "
            f"engine resumes layout {LAYOUT!r} with masking scheme {MASKING_SCHEME}: start again without --resume"
        )
    return state


def load_checkpoint(
    directory: Path,
    wrapped: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler,
    *,
    rank: int = 0,
    world: int = 1,
    seed: int = 42,
) -> tuple[int, list[dict], int]:
    """Load a checkpoint into this run's ranks, resharding it to their number; (step, log, processes that wrote it)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    state = read_state(directory)
    model_state, optimizer_state = get_state_dict(wrapped, optimizer)
    loaded = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(loaded, checkpoint_id=directory / "shards", storage_reader=safe_reader(directory / "shards"))
    set_state_dict(wrapped, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optimizer"])
    scheduler.load_state_dict(_load_tensors(directory / "scheduler.pt")["scheduler"])
    step, written_by = int(state["step"]), int(state["processes"])
    rng_path = directory / f"rng-{rank}.pt"
    if written_by == world and rng_path.is_file():
        set_rng_states(_load_tensors(rng_path))
    else:  # another number of processes: no rank's states are this rank's; a fresh, still reproducible stream
        seed_everything(seed * 1_000_003 + step * 1_009 + rank)
    log = json.loads((directory / "loss.json").read_text(encoding="utf-8"))
    return step, [entry for entry in log if entry["step"] <= step], written_by


def saved_model_names(directory: Path) -> set[str]:
    """The names of the model tensors a checkpoint holds (``model.`` and the module's own names), read from
    DCP's metadata alone: no tensor is loaded."""
    metadata = safe_reader(directory / "shards").read_metadata()
    return {name.removeprefix("model.") for name in metadata.state_dict_metadata if name.startswith("model.")}


def full_model_state(model: torch.nn.Module, world: int) -> dict[str, torch.Tensor] | None:
    """A sharded model's whole weights on rank 0's CPU (None on the others), gathered tensor by tensor.

    DCP's full state dict with CPU offload, called by every rank: no GPU ever holds a full copy of the
    model, and rank 0's host memory holds it once (what ``save_pretrained`` then writes).
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=world > 1))
    return state or None


def _load_tensors(path: Path) -> dict:
    """``torch.load`` of tensors, containers and numbers only: a file with anything else is refused unrun."""
    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"{path.name}: holds objects other than tensors and numbers, which biolm does not unpickle: start the "
            f"run again without --resume ({exc})"
        ) from None


def _barrier(world: int) -> None:
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


_METADATA_MODULE = "torch.distributed.checkpoint.metadata"  # Metadata, its storage and tensor descriptions
_TORCH_NAMES = {"Size"} | {name for name in dir(torch) if isinstance(getattr(torch, name, None), torch.dtype)}
_ALLOWED = {
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),  # where each shard's bytes are in its file
    ("torch.serialization", "_get_layout"),  # a layout (torch.strided) by its name
    ("pathlib", "PosixPath"),  # the checkpoint id DCP recorded
    ("pathlib", "WindowsPath"),
    ("collections", "OrderedDict"),
} | {("torch", name) for name in _TORCH_NAMES}


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module != _METADATA_MODULE and (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(
                f"the checkpoint's DCP metadata holds {module}.{name}, not one of DCP's metadata classes"
            )
        return super().find_class(module, name)


def _safe_reader_class():
    from torch.distributed.checkpoint import FileSystemReader

    class Reader(FileSystemReader):
        """DCP's file reader with a metadata unpickler that admits DCP's metadata classes only."""

        def read_metadata(self, *args, **kwargs):
            from torch.distributed.checkpoint.metadata import StorageMeta

            path = Path(self._get_metadata_path(kwargs.get("rank")))
            try:
                metadata = _MetadataUnpickler(io.BytesIO(path.read_bytes())).load()
            except pickle.UnpicklingError as exc:
                raise ValueError(f"{path}: {exc}; biolm does not unpickle it: start again without --resume") from None
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return Reader


def safe_reader(path: Path):
    """DCP's file reader for ``path``, its metadata read by the restricted unpickler (a class made on first use)."""
    return _safe_reader_class()(path)
