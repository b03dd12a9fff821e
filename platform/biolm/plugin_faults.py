"""Telling a plugin's bug from the platform's: which contributed code raised, said in one line.

Metrics, dataset readers, formulations, corpus preprocessors and recipe implementations are
code that plugins contribute, and the platform calls it deep inside a fine-tune, a pretraining
run, an import or the scoring of withheld predictions. When such code raises, the fault is the
plugin's: running the job again would fail the same way, so it is not retried, and the person who
can fix it needs to know which plugin, which contribution and which line of the plugin's code,
not a traceback that ends in the platform's files.

:func:`blame` reads an exception's traceback against the contributions' implementations: the
outermost frame that runs a contribution's code names the contribution (and so, through
:attr:`Contributions.origin`, its plugin); the innermost frame inside that plugin's package is
where it was raised. Code that returned without raising but broke its contract (a metric's NaN,
a reader that yields no examples: :class:`~biolm.specs.ContractBreach`) is reported as what it
did, located where its function is defined. Failures of the machine rather than of the code (out
of memory, a CUDA fault, a full disk) are never blamed on a plugin, and neither are the ways a
contribution's contract lets it refuse its input: :class:`~biolm.errors.DataFormatError` from a
reader, ``ValueError`` from a formulation (:data:`REFUSALS`).

No Django here: the engine, the GPU worker and the platform share it.
"""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from biolm.contribution_kinds import KINDS
from biolm.errors import DataFormatError
from biolm.plugin_identity import PluginIdentity
from biolm.plugins import Contributions
from biolm.specs import ContractBreach, ImplementationError

# The kinds whose contributions run code, as Contributions names them -> how a person names that code.
KIND_NAMES = {kind.name: kind.runs_as for kind in KINDS if kind.runs_code}
# What a contribution's contract lets it raise to refuse its input rather than to fail: a
# formulation raises ValueError to refuse options or examples it cannot encode (and a metric's
# ValueError means "undefined here", which the engine records as None before anything is blamed).
REFUSALS: dict[str, tuple[type[BaseException], ...]] = {kind.name: kind.refuses_with for kind in KINDS
                                                         if kind.refuses_with}  # fmt: skip
EXCEPTION_TEXT_MAX = 300
ENVIRONMENTAL_WORDS = ("out of memory", "cuda", "cudnn", "nccl", "cublas")


@dataclass(frozen=True)
class PluginFault:
    """Which plugin's code did what wrong, and where, in the one line a job's error holds.

    Code that raised reads ``plugin acme (biolm-acme 0.1): metric 'acme-f1' raised
    ZeroDivisionError: division by zero at biolm_acme/metrics.py:19``; code that broke its contract
    without raising (``conduct`` set) reads ``plugin acme (biolm-acme 0.1): metric 'acme-f1'
    returned nan, not a finite number (defined at biolm_acme/metrics.py:12)``. The line always
    starts ``plugin ``: the worker reads ``error: plugin ...`` as the plugin's fault.
    """

    plugin: str
    kind: str  # a key of KIND_NAMES
    slug: str
    exception: str  # "ZeroDivisionError: division by zero"
    location: str  # "biolm_acme/metrics.py:12", relative to the plugin's package
    conduct: str = ""  # what the code did against its contract without raising: "returned nan, not a finite number"

    def __str__(self) -> str:
        what = f"plugin {self.plugin}: {KIND_NAMES.get(self.kind, self.kind)} {self.slug!r}"
        if self.conduct:
            return f"{what} {self.conduct} (defined at {self.location})"
        return f"{what} raised {self.exception} at {self.location}"


class PluginCodeError(Exception):
    """Raised in place of a plugin's exception once it is blamed; ``__cause__`` keeps the original."""

    def __init__(self, fault: PluginFault) -> None:
        super().__init__(str(fault))
        self.fault = fault


@dataclass(frozen=True)
class _Implementation:
    kind: str
    slug: str
    plugin: str
    module: str
    qualname: str  # a function's, or a class's (its methods then match too)


def blame(
    exc: BaseException, contributions: Contributions, dataset: str | None = None, recipe: str | None = None
) -> PluginFault | None:
    """The plugin fault behind ``exc``, or None when no contributed code raised it (or the machine failed).

    ``dataset`` and ``recipe`` say what was being worked on, so that code several contributions
    share (one reader for three datasets, one function behind two metrics) is blamed on the one
    in use.
    """
    if isinstance(exc, PluginCodeError):
        return exc.fault
    if isinstance(exc, ContractBreach) and exc.contribution is not None:
        return _broken_contract(exc, contributions)  # before the machine's words: a path may contain "cuda"
    if isinstance(exc, DataFormatError) or _environmental(exc):
        return None
    preferred = _in_use(contributions, dataset, recipe)
    if isinstance(exc, ImplementationError) and exc.contribution is not None:
        return _broken_contract(exc, contributions)
    implementations = _implementations(contributions)
    frames = [(frame, line) for frame, line in traceback.walk_tb(exc.__traceback__)]
    for frame, _ in frames:  # outermost first: the call into the plugin's code
        matches = [i for i in implementations if _runs(frame, i)]
        if not matches:
            continue
        chosen = next((i for i in matches if (i.kind, i.slug) in preferred), matches[0])
        if isinstance(exc, REFUSALS.get(chosen.kind, ())):
            return None  # the contribution refused its input, as its contract says it may
        return PluginFault(
            plugin=_plugin_label(contributions, chosen.plugin),
            kind=chosen.kind,
            slug=chosen.slug,
            exception=exception_text(exc),
            location=_location(frames, chosen.module),
        )
    return None


def exception_text(exc: BaseException) -> str:
    """``Type: message`` on one line, cut to a readable length."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= EXCEPTION_TEXT_MAX else text[: EXCEPTION_TEXT_MAX - 3] + "..."


def _environmental(exc: BaseException) -> bool:
    """The machine failed, not the code: retrying elsewhere may succeed."""
    if isinstance(exc, MemoryError | OSError):
        return True
    if "OutOfMemory" in type(exc).__name__:
        return True
    return isinstance(exc, RuntimeError) and any(word in str(exc).lower() for word in ENVIRONMENTAL_WORDS)


def _in_use(contributions: Contributions, dataset: str | None, recipe: str | None) -> set[tuple[str, str]]:
    preferred: set[tuple[str, str]] = set()
    if recipe:
        preferred.add(("recipes", recipe))
    spec = contributions.datasets.get(dataset or "")
    if spec is not None:
        preferred.add(("datasets", spec.slug))
        preferred.add(("metrics", spec.metric))
        task_type = contributions.task_types.get(spec.task_type)
        if task_type is not None:
            preferred.add(("task_types", task_type.slug))
            companions = spec.companion_metrics if spec.companion_metrics is not None else task_type.companion_metrics
            preferred.update(("metrics", slug) for slug in companions)
    return preferred


def _implementations(contributions: Contributions) -> list[_Implementation]:
    found = []

    def add(kind: str, slug: str, value: object) -> None:
        named = _named(value)
        if named is not None:
            found.append(_Implementation(kind, slug, contributions.origin.get((kind, slug), "?"), *named))

    for slug, metric in contributions.metrics.items():
        add("metrics", slug, metric.implementation)
    for slug, task_type in contributions.task_types.items():
        add("task_types", slug, task_type.formulation)
    for slug, preprocessor in contributions.preprocessors.items():
        add("preprocessors", slug, preprocessor.implementation)
    for slug, protocol in contributions.protocols.items():
        add("protocols", slug, protocol.planner)
    for slug, recipe in contributions.recipes.items():
        if recipe.implementation is not None:
            add("recipes", slug, recipe.implementation)
    for slug, dataset in contributions.datasets.items():
        if dataset.adapter is not None:
            add("datasets", slug, dataset.adapter.reader)
    return found


def _named(value: object) -> tuple[str, str] | None:
    """(module, qualname) of an implementation: the object itself, or what its ``module:attr`` path names."""
    if isinstance(value, str):
        module, _, attribute = value.partition(":")
        target: object = sys.modules.get(module)  # not imported: it cannot be in the traceback
        for part in attribute.split("."):
            target = getattr(target, part, None)
        if target is None:
            return module, attribute
        value = target
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    return (module, qualname) if module and qualname else None


def _runs(frame: FrameType, implementation: _Implementation) -> bool:
    if frame.f_globals.get("__name__") != implementation.module:
        return False
    qualname = frame.f_code.co_qualname
    return qualname == implementation.qualname or qualname.startswith(implementation.qualname + ".")


def _package_root(module: str) -> Path | None:
    """The folder of ``module``'s top-level package (or the file of a one-module plugin)."""
    top = sys.modules.get(module.partition(".")[0])
    if top is None:
        return None
    paths = list(getattr(top, "__path__", ()) or ())
    if paths:
        return Path(paths[0]).resolve()
    file = getattr(top, "__file__", None)
    return Path(file).resolve() if file else None


def _location(frames: Iterable[tuple[FrameType, int]], module: str) -> str:
    """``file:line`` of the innermost frame in the plugin's package, relative to the package's parent."""
    root = _package_root(module)
    chosen = None
    for frame, line in frames:
        path = Path(frame.f_code.co_filename).resolve()
        inside = root is not None and (path == root or root in path.parents)
        if inside or (root is None and frame.f_globals.get("__name__") == module):
            chosen = (path, line)
    if chosen is None:
        return "an unknown place"
    path, line = chosen
    base = root.parent if root is not None else path.parent
    try:
        shown = path.relative_to(base)
    except ValueError:
        shown = Path(os.path.basename(path))
    return f"{shown.as_posix()}:{line}"


def _broken_contract(exc: ImplementationError, contributions: Contributions) -> PluginFault:
    """An implementation that ran but broke its contract (a metric returning NaN): blamed at its definition."""
    kind, slug = exc.contribution
    spec = getattr(contributions, kind, {}).get(slug)
    value = getattr(exc, "implementation", None) or _implementation_of(spec)
    return PluginFault(
        plugin=_plugin_label(contributions, contributions.origin.get((kind, slug), "?")),
        kind=kind,
        slug=slug,
        exception=exception_text(exc),
        location=_definition(value) if value is not None else "its implementation",
        conduct=getattr(exc, "conduct", ""),
    )


def _implementation_of(spec: object) -> object:
    """The code a contribution's spec names: a metric's or preprocessor's implementation, a formulation, a reader,
    a protocol's planner."""
    adapter = getattr(spec, "adapter", None)
    reader = getattr(adapter, "reader", None)
    named = getattr(spec, "implementation", None) or getattr(spec, "formulation", None)
    return named or getattr(spec, "planner", None) or reader


def _definition(value: object) -> str:
    """``file:line`` where ``value`` (a callable or a ``module:attribute`` path) is defined, relative to its package."""
    named = _named(value)
    if named is None:
        return "its implementation"
    target = sys.modules.get(named[0])
    for part in named[1].split("."):
        target = getattr(target, part, None)
    try:
        file, line = inspect.getsourcefile(target), inspect.getsourcelines(target)[1]
        root = _package_root(named[0])
        base = root.parent if root is not None else Path(file).parent
        return f"{Path(file).resolve().relative_to(base).as_posix()}:{line}"
    except (TypeError, OSError, ValueError):
        return "its implementation"


def _plugin_label(contributions: Contributions, plugin: str) -> str:
    """The plugin's name, with its distribution and version when it was installed from one."""
    info = next((p for p in contributions.plugins if p.name == plugin), None)
    return PluginIdentity(plugin, info.distribution, info.version).named if info is not None else plugin
