from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"

    def ready(self) -> None:
        from submissions import signals  # noqa: F401 -- connects the receivers that follow the jobs
