"""Where jobs run, apart from the web and its database.

``workers.engine`` is the Django-free engine (fine-tuning, pretraining, evaluation), usable from a
command line or a notebook; ``workers.runner`` is the database-free GPU worker: its Celery application
and its one task, which claims a job through the platform's internal API, runs the engine on it and
uploads the results.
"""
