"""biolm: an evaluation platform for biomedical and clinical language models.

This package is the Django-free core -- specs, hookspecs, plugins, aggregation, schemas,
dataset I/O, corpora, published results, the plugin kit (``biolm.testing``) and the plugin
scaffold -- so workers and plugin authors can use it on their own. The Django project lives in
``biolm_site``; import-linter (pyproject.toml) keeps the two apart.

Plugin authors mark their hook implementations with :data:`hookimpl`
(``from biolm import hookimpl``), the one marker of the ``biolm`` project.
"""

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("biolm")
"""The marker of every biolm hook implementation, built-in or third-party: ``@hookimpl``."""
