from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"

    def ready(self) -> None:
        """Record published results and recompute scores when the registry syncs the plugins."""
        from leaderboard.sync import recompute_stale, record_published_results
        from registry.signals import benchmark_synced, contributions_synced

        benchmark_synced.connect(record_published_results, dispatch_uid="leaderboard.record_published_results")
        contributions_synced.connect(recompute_stale, dispatch_uid="leaderboard.recompute_stale")
