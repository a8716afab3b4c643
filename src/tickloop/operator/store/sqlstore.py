"""The operations of the SQL backends, written once over the ``Tx`` connector.

Subclasses (``SQLiteStore``, ``PostgresStore``) supply transactions, migrations and tick locks.
Each write runs in one transaction; each state change is one conditional UPDATE whose WHERE names
the prior state, and an empty RETURNING means another process got there first. The operations
live in ``sqlops``, one module per aggregate.
"""

from __future__ import annotations

from tickloop.operator.store.sqlops.attention import AttentionOps
from tickloop.operator.store.sqlops.board import BoardOps
from tickloop.operator.store.sqlops.intents import IntentOps
from tickloop.operator.store.sqlops.notes import NoteOps
from tickloop.operator.store.sqlops.profiles import ProfileOps
from tickloop.operator.store.sqlops.progress import ProgressOps
from tickloop.operator.store.sqlops.views import ViewOps

__all__ = ["SqlStore"]


class SqlStore(ProfileOps, BoardOps, IntentOps, ProgressOps, AttentionOps, NoteOps, ViewOps):
    """Store operations over named SQL queries."""
