"""The Django-free fine-tuning and evaluation engine."""
