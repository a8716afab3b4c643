"""The Store interface: every operation the operator's ticks, executor and monitor perform.

One interface, one implementation per SQL dialect, chosen by URL in ``open_store``. The contract
suite in ``tests/contract`` runs the same tests on SQLite in memory, on a file, and PostgreSQL.

The operations are declared by aggregate in ``interface/`` (as ``sqlops/`` implements them); this
class combines them with the lifecycle: closing, migrations and tick locks.

Rules every backend keeps:

- Every row belongs to one profile; an id from another profile is ``NotFoundError``.
- Every state change is compare-and-set: it names the prior state and raises ``ConflictError``
  when the row was not in it (a second process finds zero rows changed). ``claim_intents``,
  ``reap_stuck`` and ``finish_and_send`` return what they won instead, because losing is their
  normal case.
- Time is passed in (``now``); the store never reads the clock.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from types import TracebackType

from tickloop.operator.store.interface.attention import AttentionInterface
from tickloop.operator.store.interface.board import BoardInterface
from tickloop.operator.store.interface.common import EPOCH, PRUNABLE
from tickloop.operator.store.interface.intents import Ending, IntentInterface
from tickloop.operator.store.interface.notes import NoteInterface
from tickloop.operator.store.interface.profiles import ProfileInterface
from tickloop.operator.store.interface.progress import ProgressInterface
from tickloop.operator.store.interface.views import ViewInterface

__all__ = ["EPOCH", "PRUNABLE", "Ending", "Store", "search_tokens"]

_WORD = re.compile(r"[^\W_]+")


class Store(
    ProfileInterface,
    BoardInterface,
    IntentInterface,
    ProgressInterface,
    NoteInterface,
    AttentionInterface,
    ViewInterface,
):
    """The operator's state, behind named operations."""

    #: The URL this store was opened with, password removed (safe to print).
    url: str

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""

    def loop_reader(self, timeout_s: float) -> Store | None:
        """A store to read from on an event loop, or None where reads must leave the loop.

        Its reads never wait for this store's writes (a connection of its own) nor for another
        process's write lock (SQLite's WAL), give up after ``timeout_s`` with ``StoreBusyError``, and
        it refuses every write. Closed with this store. None, the default and PostgreSQL's answer: a
        read is a round trip over the network, so a caller on an event loop runs it in a thread.
        """
        del timeout_s
        return None

    def release_tick_lock(self, profile: str, tick_kind: str, *, owner: str) -> None:
        """For a signal handler about to exit without unwinding ``tick_lock``: free the lock now.
        A no-op default: PostgreSQL's advisory lock dies with its process."""

    def abandon_transaction(self) -> None:
        """For a signal handler that is about to exit the process: roll back whatever transaction
        the interrupted code left open on this thread, so the last writes (the progress row, the tick
        lock's release) can go through, whatever statement the interrupted code was in the middle of.
        Only SQLite needs it (it also moves to a fresh connection): PostgreSQL writes the row on
        another pooled connection and the server rolls the abandoned one back when the process exits."""

    @abstractmethod
    def migrate(self, *, target: int | None = None) -> list[int]:
        """Apply pending migrations (up to ``target``); return the versions applied now."""

    @abstractmethod
    def schema_version(self) -> int:
        """The highest migration applied (0 for an empty database)."""

    # -- tick locks ---------------------------------------------------------------------------------

    @abstractmethod
    def tick_lock(
        self,
        profile: str,
        tick_kind: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta = timedelta(hours=1),
    ) -> AbstractContextManager[bool]:
        """``with store.tick_lock(...) as held:`` — held is False when another tick of this kind
        for this profile is running; two never overlap. ``lease`` bounds a crashed holder
        (SQLite); PostgreSQL uses a session advisory lock, released when its process dies."""


def search_tokens(text: str) -> list[str]:
    """The words of ``text``, lowercased: runs of letters and digits. Every backend indexes and
    queries by these, so punctuation and search operators in a query are never syntax."""
    return _WORD.findall(text.lower())
