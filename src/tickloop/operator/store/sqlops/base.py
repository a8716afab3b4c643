"""What every group of SQL store operations stands on: the backend's transactions."""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager

from tickloop.errors import ConflictError, NotFoundError
from tickloop.operator.store._sql import Tx
from tickloop.operator.store.base import Store


class SqlBase(Store):
    """The transactions a SQL backend supplies to the operations (``sqlops.*``)."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Tx]:
        """A write transaction, serialised against other writers where the backend needs it."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """A read-only transaction."""

    def _write_one(self) -> AbstractContextManager[Tx]:
        """For a write that is ONE statement (plus reads that only explain a lost compare-and-set):
        a backend may run it as its own implicit transaction. The default is ``_write``."""
        return self._write()

    @abstractmethod
    def _fts_query(self, tokens: list[str]) -> str:
        """The backend's full-text query for these words (all must match)."""


def lost(kind: str, row_id: int, profile: str, expected: object, found: object) -> None:
    if found is None:
        raise NotFoundError(f"no {kind} {row_id} in profile {profile!r}")
    raise ConflictError(f"{kind} {row_id} is {found}, not {expected}: another process changed it")
