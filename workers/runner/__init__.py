"""The GPU worker: runs jobs the platform sends, holding no database credentials.

It imports neither Django nor the platform's apps and never reads ``DATABASE_URL`` (an
import-linter contract and a test check this). Everything it knows about a job comes in its
Celery message (id, token, spec) and from the platform's internal API (:mod:`jobs.api`): the
claim, the inputs to download, heartbeats, uploads and the job's end.
"""
