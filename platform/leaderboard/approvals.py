"""A held dataset's results reach the leaderboard only once its data holder approves them.

A holder under a data use agreement may need to see a number before it is published (a result can
reveal something about its patients' notes, or the agreement says who signs off), so a result on a held
dataset is recorded ``pending`` (:mod:`leaderboard.recording`) and one of the holder's approvers, or a
superuser, approves or rejects it in the admin. A rejection keeps its reason, which the admin shows; a
new recording of the same entry (the submitter ran again) asks for approval again. Saving the result
rescores its model at commit (:mod:`leaderboard.signals`), so an approved result shows up everywhere at once.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from leaderboard.models import Result


class ApprovalRefused(PermissionError):
    """The user may not decide on this result, or the decision is incomplete; the message says why."""


def may_decide(result: Result, user) -> bool:
    """Whether ``user`` may approve or reject ``result``: its dataset's holder's approver, or a superuser."""
    holder = result.dataset.held_by
    return holder is not None and holder.may_approve(user)


@transaction.atomic
def decide(result: Result, user, decision: str, reason: str = "") -> Result:
    """Approve (``approved``) or reject (``rejected``, with a ``reason``) ``result`` as ``user``."""
    if not may_decide(result, user):
        holder = result.dataset.held_by
        whose = f"{holder}'s approvers" if holder is not None else "nobody (its dataset is not held)"
        raise ApprovalRefused(f"{user} may not decide on {result}: that is for {whose}")
    if decision not in (Result.Approval.APPROVED, Result.Approval.REJECTED):
        raise ApprovalRefused(f"decide approved or rejected, not {decision!r}")
    if decision == Result.Approval.REJECTED and not reason.strip():
        raise ApprovalRefused("say why it is rejected: the submitter and the other approvers read the reason")
    result.approval, result.approval_reason = decision, reason.strip()
    result.approved_by, result.approval_at = user, timezone.now()
    result.save(update_fields=["approval", "approval_reason", "approved_by", "approval_at", "updated_at"])
    return result


def awaiting(user) -> list[Result]:
    """The pending results ``user`` may decide on, oldest first."""
    pending = Result.everything.filter(approval=Result.Approval.PENDING).select_related(
        "dataset__held_by", "language_model", "metric"
    )
    return [result for result in pending.order_by("updated_at") if may_decide(result, user)]
