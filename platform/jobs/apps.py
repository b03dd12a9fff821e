from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self) -> None:
        """Run the Hub fetch jobs on the cpu queue (:mod:`jobs.hub_fetch`), and forget a fetch job's Hub token as
        soon as it fails for good (the tick forgets those of cancelled and succeeded ones too)."""
        from jobs import handlers, hub_fetch, hub_tokens
        from jobs.models import Job
        from jobs.signals import job_failed_for_good

        handlers.register(Job.Kind.FETCH, hub_fetch.run)

        def forget_the_token(sender, job, **_: object) -> None:
            if job.kind == Job.Kind.FETCH:
                hub_tokens.forget([job.pk])

        job_failed_for_good.connect(forget_the_token, dispatch_uid="jobs.forget_hub_token", weak=False)
