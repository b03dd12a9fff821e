"""biolm: an evaluation platform for biomedical and clinical language models.

``specs``, ``hookspecs``, ``plugins``, ``aggregation`` and ``published`` import
no Django, so workers and plugin authors can use them on their own.
"""

__version__ = "0.1.0"
