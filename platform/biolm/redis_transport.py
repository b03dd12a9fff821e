"""Kombu's Redis transport, with which a worker outlives a Redis restart while it runs a job.

Every biolm task acknowledges late (after it ran), so that a worker that dies mid-job leaves its
message to be delivered again. When Redis goes away while a prefork worker runs such a task,
kombu 5.7 stops the worker for good with "Unrecoverable error: AttributeError: 'NoneType' object
has no attribute 'hostname'", in two places:

* the consumer closes the broken connection, and a channel it closes afterwards gives its
  unacknowledged messages back to Redis through the transport that has just been closed;
* the task ends after the worker reconnected, and its message is acknowledged on the old
  channel, through the same closed transport.

Both look up the closed transport's client (``None``) for Redis's address, and an AttributeError
is no connection error, so nothing catches it. In CI the platform's CPU worker stopped this way
while a score job ran across a Redis restart, and no job was dispatched after it.

On a channel whose transport is closed this :class:`Channel` neither gives messages back nor
acknowledges nor rejects them; it logs that. Nothing is lost: a message left unacknowledged in
Redis returns after the visibility timeout, the platform sends a job no worker claimed again
(``BIOLM_REDISPATCH_AFTER_S``), and a delivery of a job that is already claimed or done does
nothing (``jobs.lifecycle.claim``).
"""

from __future__ import annotations

import logging

from kombu.transport import redis

logger = logging.getLogger("biolm.broker")


class Channel(redis.Channel):
    """A Redis channel that leaves its messages alone once its transport is closed."""

    @property
    def transport_closed(self) -> bool:
        """Whether the connection this channel was opened on has been closed (kombu then drops its client)."""
        return self.connection is None or self.connection.client is None

    @property
    def do_restore(self) -> bool:  # read by kombu when the channel closes (virtual.QoS.restore_unacked_once)
        if self.transport_closed and self.qos._delivered:
            logger.warning(
                "the broker connection was lost with %d message(s) unacknowledged: they are left in Redis, "
                "which delivers them again after the visibility timeout", len(self.qos._delivered),
            )  # fmt: skip
        return not self.transport_closed

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        if self._left_alone(delivery_tag, "acknowledged"):
            return
        super().basic_ack(delivery_tag, multiple=multiple)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if self._left_alone(delivery_tag, "rejected"):
            return
        super().basic_reject(delivery_tag, requeue=requeue)

    def _left_alone(self, delivery_tag: str, what: str) -> bool:
        if not self.transport_closed:
            return False
        logger.warning(
            "message %s was read before the broker connection was lost, so it is not %s; "
            "if Redis delivers it again, its job's claim makes that delivery do nothing", delivery_tag, what,
        )  # fmt: skip
        return True


class Transport(redis.Transport):
    """The ``redis://`` transport of every biolm Celery app (:func:`biolm.broker.transport`)."""

    Channel = Channel
