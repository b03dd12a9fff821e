"""``manage.py push_results OWNER/NAME``: propose a Hub model's biolm results to its repository's card.

Opens a pull request on the model's Hugging Face Hub repository (a model submitted by Hub id) that adds its
results to the card's ``model-index`` (:mod:`leaderboard.hub_push`). The token is read from ``HF_TOKEN``, the
variable the Hugging Face tools read, given at that time and kept nowhere: an option would stay in the
shell's history and the process list.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard.hub_push import PushRefused, push_results
from registry.models import LanguageModel


class Command(BaseCommand):
    help = "Open a pull request on a Hub model's repository that adds its biolm results to its model card."

    def add_arguments(self, parser) -> None:
        parser.add_argument("model", help="The model's biolm address, owner/name (a model submitted by Hub id).")
        parser.add_argument("--site-url", default=None, help="The site's address the results link to "
                            "(default BIOLM_SITE_URL).")  # fmt: skip

    def handle(self, *args, **options) -> None:
        namespace, _, name = options["model"].partition("/")
        model = LanguageModel.objects.filter(namespace=namespace, address_name=name).first()
        if model is None:
            raise CommandError(f"no model {options['model']!r}: give its address, owner/name, as its page shows it")
        try:
            pushed = push_results(model, os.environ.get("HF_TOKEN", "").strip(),
                                  options["site_url"] or settings.BIOLM_SITE_URL)  # fmt: skip
        except PushRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"opened {pushed.pull_request}: {pushed.values} result values in {', '.join(pushed.files)}"
            )
        )
