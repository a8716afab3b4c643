"""``manifest.jsonl``: what a run directory's sessions did, one JSON record a line.

``started`` before a session writes anything, ``finished`` (with its status, steps and timings)
after it ends, ``abandoned`` for an attempt a crash left open (its key then runs afresh as a new
session). Append-only; each record is fsynced before anything relies on it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickloop.errors import ConfigError, LedgerError
from tickloop.harness.durable import FsyncPool
from tickloop.protocol.ledger import loads_bounded

MANIFEST = "manifest.jsonl"


class Manifest:
    """``manifest.jsonl``: append-only, one record a line, each flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.endswith(b"\n"):
                    return  # a torn tail from a crash: that session was never finished
                try:
                    rec = loads_bounded(line)  # a depth bound, like every other reader of run files
                except (ValueError, LedgerError):
                    raise ConfigError(f"{self.path}:{lineno}: not a JSON record") from None
                if not isinstance(rec, dict):
                    raise ConfigError(f"{self.path}:{lineno}: not a JSON object")
                yield rec

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record; it is durable when this returns."""
        fd = _open_for_append(self.path)
        try:
            os.write(fd, _line(record))
            os.fsync(fd)
        finally:
            os.close(fd)


class ManifestWriter:
    """The manifest as the runner writes it, under the run's ``FsyncPool``: one descriptor, each
    record written at once and made durable by an fsync that the records of concurrent sessions
    share (a group commit: the records written while one fsync is in flight wait for the next)."""

    def __init__(self, manifest: Manifest, pool: FsyncPool) -> None:
        self._fd = _open_for_append(manifest.path)
        self._watched = pool.watch(manifest.path)

    async def append(self, record: Mapping[str, Any]) -> None:
        """Append one record; it is durable when this returns (with every record written before it)."""
        self.write(record)
        await self._watched.settle()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record now; it is durable once an ``append`` or ``settle`` after it returns."""
        os.write(self._fd, _line(record))  # O_APPEND: whole lines, even with other shard processes
        self._watched.wrote()

    async def settle(self) -> None:
        """Every record written so far is durable when this returns."""
        await self._watched.settle()

    def close(self) -> None:
        os.close(self._fd)
        self._watched.close()


def _open_for_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _line(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


@dataclass(slots=True)
class KeyState:
    attempts: int = 0
    open_session: str | None = None
    finished: bool = False


def manifest_state(manifest: Manifest) -> dict[str, KeyState]:
    """Per session key: attempts so far, an attempt left open, and whether one finished."""
    state: dict[str, KeyState] = {}
    for rec in manifest.read():
        key = str(rec.get("key", ""))
        entry = state.setdefault(key, KeyState())
        event = rec.get("event")
        if event == "started":
            entry.attempts = max(entry.attempts, int(rec.get("attempt", 1)))
            entry.open_session = str(rec.get("sessionId"))
        elif event == "finished":
            entry.finished, entry.open_session = True, None
        elif event == "abandoned":
            entry.open_session = None
    return state
