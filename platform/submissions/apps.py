from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
