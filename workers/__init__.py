"""Celery tasks (later) and the Django-free fine-tuning and evaluation engine (workers/engine)."""
