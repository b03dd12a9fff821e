"""Column sizes of the rows that plugin contributions become (the registry's and the leaderboard's models use the
same constants): a contribution that validates (:mod:`biolm.specs`) must never fail to save, on PostgreSQL least
of all."""

SLUG_MAX = 100
NAME_MAX = 200
SOURCE_MAX = 300
VERSION_MAX = 50
MODEL_TYPE_MAX = 100
LABEL_MAX = 200
VOCABULARY_MAX = 300
CORPUS_MAX = 500
CHECKPOINT_MAX = 500
LANGUAGE_MODEL_SLUG_MAX = 150  # "<benchmark>--<published model>"
NAMESPACE_MAX = 150  # a model address's owner part: a username (Django's longest) or "papers"
INTEGER_MAX = 2**31 - 1  # PositiveIntegerField
BIG_INTEGER_MAX = 2**63 - 1  # BigIntegerField
