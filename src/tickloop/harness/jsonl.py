"""Append-only JSONL files: one record per line, each fsynced before ``append`` returns.

A crash can only tear the last line (earlier lines were fsynced), so reopening cuts a torn tail
off (it was never acknowledged) and the next record starts on a clean line. ``MemoryLog`` is the
same interface without a file, for embedders and benchmarks that do not persist.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from tickloop.errors import LedgerError, TickloopError
from tickloop.protocol.ledger import loads_bounded

FILE_MODE = 0o600
DIR_MODE = 0o700


class SessionError(TickloopError):
    """The session could not be read or written."""


class RecordLog(Protocol):
    """Where a session's records go."""

    def append(self, record: Mapping[str, Any]) -> None:
        """Durably append one record."""
        ...

    def close(self) -> None:
        """Release the file, if any."""
        ...


class MemoryLog:
    """Keeps records in a list: no durability, for tests, embedders and benchmarks."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def append(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))

    def close(self) -> None:
        """Nothing to release."""


def encode(record: Mapping[str, Any]) -> bytes:
    """One compact JSON line (no newline). Raises ``SessionError`` for text that is not Unicode."""
    try:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (UnicodeEncodeError, ValueError, TypeError) as exc:
        raise SessionError(f"cannot encode session record: {exc}") from None


class JsonlLog:
    """An open append-only JSONL file; ``append`` returns only after the line is fsynced.

    ``fsync=False``: ``append`` only writes; a ``tickloop.harness.durable.Durability`` fsyncs."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path, self._fsync = path, fsync
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        _lock(self._fd, path)
        self.torn_repaired = _cut_torn_tail(path)

    def append(self, record: Mapping[str, Any]) -> None:
        if self._fd < 0:
            raise SessionError(f"{self.path} is closed")
        os.write(self._fd, encode(record) + b"\n")
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _lock(fd: int, path: Path) -> None:
    """One writer per session: two processes appending would interleave turns. A crash (even
    kill -9) releases the lock with the process, so it never needs cleaning up."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SessionError(f"{path} is open in another process; close that chat first") from None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, ignoring a torn last line; a bad earlier line is an error."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror}") from None
    lines = data.split(b"\n")
    lines.pop()  # b"" after the final newline, or a torn tail that was never acknowledged
    out = []
    for lineno, raw in enumerate(lines, start=1):
        try:
            obj = loads_bounded(raw)
        except LedgerError as exc:
            raise SessionError(f"{path}, line {lineno}: {exc}") from None
        if not isinstance(obj, dict):
            raise SessionError(f"{path}, line {lineno}: a record must be a JSON object")
        out.append(obj)
    return out


def _cut_torn_tail(path: Path) -> bool:
    if not path.exists():
        return False
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep == len(data):
        return False
    with path.open("r+b") as handle:
        handle.truncate(keep)
        os.fsync(handle.fileno())
    return True


def private_dir(directory: Path) -> Path:
    """Create ``directory`` (0700) if needed: transcripts are private."""
    directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    return directory
