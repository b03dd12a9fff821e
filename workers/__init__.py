"""Celery tasks and the Django-free ML engine (workers/engine) arrive with the fine-tuning issue."""
