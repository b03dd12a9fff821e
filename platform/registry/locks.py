"""One writer at a time for the registry's whole-table work (plugin sync, dataset imports).

Two web replicas start together and both run ``sync_plugins``; two operators import the same
dataset at once. Both must succeed, with no duplicate rows. On PostgreSQL a transaction-scoped
advisory lock serialises them (the second waits, then finds the rows written and changes
nothing); on SQLite every write transaction already takes the database lock up front
(``transaction_mode`` IMMEDIATE in settings), which has the same effect.
"""

from __future__ import annotations

import zlib

from django.db import connection


def hold_for_transaction(name: str) -> None:
    """Wait for, then hold until the current transaction ends, the lock called ``name``."""
    if connection.vendor != "postgresql":
        return
    key = zlib.crc32(f"biolm:{name}".encode())
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
