"""Every hook a biolm plugin can implement, one docstring each (docs/plugins.md has examples).

A plugin is a module or object with functions decorated by ``biolm.hookimpl``
(``from biolm import hookimpl``); it never needs to import the platform's Django code.
Each hook returns a list of dataclasses from :mod:`biolm.specs` (or ``None``
to contribute nothing). All answers are collected: no hook here is
``firstresult``, because several plugins may each contribute, say, datasets.

Every contribution is something the platform executes, not only a description: metrics carry
their implementation, task types their formulation, preprocessors their streaming function,
dataset adapters their reader, architectures their config presets, recipes (optionally) their
objective, protocols their planner. Implementations are callables or ``"module:function"`` paths,
imported only when used.

Hooks only grow by adding arguments, so an implementation may accept any
subset of the documented arguments (pluggy passes only the ones it names).

Each hook is made from its kind's row of :data:`biolm.contribution_kinds.KINDS`, which names it
(``biolm_metrics``, ``biolm_datasets``, ...) and holds its docstring.
"""

from __future__ import annotations

import pluggy

from biolm.contribution_kinds import KINDS, ContributionKind

PROJECT_NAME = "biolm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


def _hook(kind: ContributionKind):
    """The hook of ``kind``, named and documented by its row of :data:`biolm.contribution_kinds.KINDS`."""

    def hook() -> list | None:
        return None

    hook.__name__ = hook.__qualname__ = kind.hook
    hook.__doc__ = kind.doc
    hook.__module__ = __name__
    return hookspec(hook)


for _kind in KINDS:  # one hook per kind: biolm_metrics, biolm_datasets, ...
    globals()[_kind.hook] = _hook(_kind)
del _kind
