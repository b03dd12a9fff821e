"""``manage.py holders``: data holders, whose gated datasets run only on their own hosts.

* ``holders add NAME [--title T]``: a new holder; prints its workers' credential, once.
* ``holders bind NAME SLUG...``: its restricted datasets; their waiting jobs move to its queue.
* ``holders unbind SLUG...``: back to the platform's workers.
* ``holders approver NAME USERNAME [--remove]``: who approves its datasets' results in the admin.
* ``holders rotate NAME``: a new credential; the old one stops working at once.
* ``holders list``: each holder, its datasets, approvers and live workers.

The holder's GPU hosts set ``BIOLM_WORKER_SECRET`` to the credential (docs/operators.md, "Hosting gated
clinical data").
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from jobs import dispatch, held
from registry.holders import HolderError, add_holder, rotate
from registry.models import DataHolder


class Command(BaseCommand):
    help = "Data holders: gated datasets kept on their own hosts, their workers' credential and their approvers."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="a new holder; prints its workers' credential once")
        add.add_argument("name")
        add.add_argument("--title", default="", help="the institution's name")
        bind = actions.add_parser("bind", help="bind restricted datasets to a holder")
        bind.add_argument("name")
        bind.add_argument("slugs", nargs="+")
        unbind = actions.add_parser("unbind", help="release datasets from their holder")
        unbind.add_argument("slugs", nargs="+")
        approver = actions.add_parser("approver", help="who approves the holder's results")
        approver.add_argument("name")
        approver.add_argument("username")
        approver.add_argument("--remove", action="store_true")
        again = actions.add_parser("rotate", help="a new credential; the old one stops working")
        again.add_argument("name")
        actions.add_parser("list", help="every holder")

    def handle(self, *args, **options) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except HolderError as exc:
            raise CommandError(str(exc)) from None

    def _add(self, options: dict) -> None:
        holder, credential = add_holder(options["name"], options["title"])
        self.stdout.write(f"holder {holder.name}: its jobs wait in queue {holder.queue}")
        self.stdout.write(f"its workers' BIOLM_WORKER_SECRET (shown once, never stored): {credential}")

    def _bind(self, options: dict) -> None:
        bound = held.bind(_holder(options["name"]), options["slugs"])
        self.stdout.write(f"bound to {options['name']}: {', '.join(d.slug for d in bound)}")

    def _unbind(self, options: dict) -> None:
        released = held.unbind(options["slugs"])
        self.stdout.write(f"released: {', '.join(d.slug for d in released)}")

    def _approver(self, options: dict) -> None:
        holder = _holder(options["name"])
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        if options["remove"]:
            holder.approvers.remove(user)
        else:
            holder.approvers.add(user)
            if not user.is_staff:  # the approval queue is in the admin
                type(user).objects.filter(pk=user.pk).update(is_staff=True)
        self.stdout.write(f"{holder.name}'s approvers: {', '.join(u.username for u in holder.approvers.all()) or '-'}")

    def _rotate(self, options: dict) -> None:
        credential = rotate(_holder(options["name"]))
        self.stdout.write(f"{options['name']}'s new BIOLM_WORKER_SECRET (the old one no longer works): {credential}")

    def _list(self, options: dict) -> None:
        live = dispatch.live_workers(settings.BIOLM_HEARTBEAT_STALE_S)
        for holder in DataHolder.objects.prefetch_related("datasets", "approvers"):
            workers = [w.name for w in live if w.holder == holder.name]
            self.stdout.write(
                f"{holder.name} ({holder.queue}): datasets {', '.join(d.slug for d in holder.datasets.all()) or '-'}; "
                f"approvers {', '.join(u.username for u in holder.approvers.all()) or '-'}; "
                f"live workers {', '.join(workers) or 'none'}"
            )


def _holder(name: str) -> DataHolder:
    holder = DataHolder.objects.filter(name=name).first()
    if holder is None:
        raise CommandError(f"no holder {name!r}; `manage.py holders add {name}` makes one")
    return holder
