from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"

    def ready(self) -> None:
        """Record published results and recompute scores when the registry syncs and whenever a result changes;
        run the platform's score jobs (the jobs app runs them through :mod:`jobs.handlers`)."""
        from django.core.checks import Tags
        from django.core.checks import register as register_check
        from django.db.models.signals import post_delete, post_init, post_save

        from jobs import handlers
        from jobs.models import Job
        from leaderboard import checks, recording
        from leaderboard.models import Result
        from leaderboard.signals import remember_visibility, result_changed, visibility_changed
        from leaderboard.sync import recompute_stale, record_published_results
        from registry.models import LanguageModel
        from registry.signals import benchmark_synced, contributions_synced

        post_save.connect(result_changed, sender=Result, dispatch_uid="leaderboard.result_saved")
        post_delete.connect(result_changed, sender=Result, dispatch_uid="leaderboard.result_deleted")
        post_init.connect(remember_visibility, sender=LanguageModel, dispatch_uid="leaderboard.model_loaded")
        post_save.connect(visibility_changed, sender=LanguageModel, dispatch_uid="leaderboard.model_saved")
        benchmark_synced.connect(record_published_results, dispatch_uid="leaderboard.record_published_results")
        contributions_synced.connect(recompute_stale, dispatch_uid="leaderboard.recompute_stale")
        handlers.register(Job.Kind.SCORE, recording.run)
        register_check(checks.static_manifest_collected, Tags.staticfiles)
