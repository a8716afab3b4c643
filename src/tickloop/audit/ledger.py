"""One append-only JSONL ledger file per session.

Durability: ``append`` writes one whole line with a single ``os.write`` on an ``O_APPEND`` descriptor
and fsyncs before it returns, so a record is durable before anything acts on it. ``fsync_every=N``
(N > 1) batches fsyncs: faster, but up to N-1 acknowledged records can be lost in a power failure;
use it only where the caller says so.

Crash tolerance: a crash can only tear the *last* line (earlier lines were fsynced). The reader
reports a torn tail instead of failing, and reopening for append cuts the torn bytes off (they were
never acknowledged) so the next record starts on a clean line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.errors import LedgerError
from tickloop.filenames import session_file_name
from tickloop.protocol.ledger import GENESIS, VerifyReport, canonical, chain_digest, decode, verify

DIR_MODE = 0o700
FILE_MODE = 0o600


@dataclass(slots=True)
class LedgerRead:
    """The lines of a ledger file, plus whatever torn tail a crash left."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    torn_tail: bytes | None = None

    def records(self) -> list[dict[str, Any]]:
        """Decoded records; raises ``LedgerError`` naming the first bad line."""
        out = []
        for lineno, raw in self.lines:
            try:
                out.append(decode(raw))
            except LedgerError as exc:
                raise LedgerError(f"line {lineno}: {exc}") from None
        return out


def read_ledger(path: Path) -> LedgerRead:
    """Read a ledger file. A last line without its newline is reported as ``torn_tail``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {path}: {exc.strerror}") from None
    result = LedgerRead()
    parts = data.split(b"\n")
    tail = parts.pop()  # b"" when the file ends with a newline
    if tail:
        result.torn_tail = tail
    result.lines = [(i, line) for i, line in enumerate(parts, start=1)]
    return result


def verify_file(path: Path) -> tuple[VerifyReport, LedgerRead]:
    """Verify a ledger file's protocol invariants (see ``tickloop.protocol.ledger.verify``)."""
    read = read_ledger(path)
    return verify(read.lines), read


class LedgerFile:
    """An open ledger: appends stamp ``seq`` (and ``prev`` when chained) and are fsynced."""

    def __init__(self, path: Path, *, chain: bool = False, fsync_every: int = 1) -> None:
        if fsync_every < 1:
            raise LedgerError("fsync_every must be at least 1")
        self.path = path
        self.chain = chain
        self.fsync_every = fsync_every
        self._unsynced = 0
        self.torn_repaired = False
        self._seq, self._prev = self._recover_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        path.chmod(FILE_MODE)

    def _recover_tail(self, path: Path) -> tuple[int, str]:
        if not path.exists():
            return 0, GENESIS
        read = read_ledger(path)
        if read.torn_tail is not None:
            # Never acknowledged (append returns only after fsync): cut it so the next line is clean.
            with path.open("r+b") as handle:
                handle.truncate(path.stat().st_size - len(read.torn_tail))
                os.fsync(handle.fileno())
            self.torn_repaired = True
        if not read.lines:
            return 0, GENESIS
        lineno, last = read.lines[-1]
        try:
            seq = int(decode(last)["seq"])
        except LedgerError as exc:
            raise LedgerError(f"{path}: line {lineno} is not a valid record ({exc}); not appending") from None
        return seq, chain_digest(last)

    @property
    def seq(self) -> int:
        """The seq of the last record written."""
        return self._seq

    def append(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        """Stamp, encode and durably append one record; returns the record as written."""
        stamped = {**rec, "seq": self._seq + 1}
        if self.chain:
            stamped["prev"] = self._prev
        line = canonical(stamped)
        if b"\n" in line:  # canonical JSON escapes newlines; this guards the one-line invariant
            raise LedgerError("a ledger record must encode to one line")
        os.write(self._fd, line + b"\n")
        self._unsynced += 1
        if self._unsynced >= self.fsync_every:
            self.sync()
        self._seq += 1
        if self.chain:
            self._prev = chain_digest(line)
        return stamped

    def sync(self) -> None:
        """Make every appended record durable now."""
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = 0

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LedgerFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ensure_private_dir(directory: Path) -> Path:
    """Create ``directory`` (0700) if needed; a ledger is session metadata."""
    directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    directory.chmod(DIR_MODE)
    return directory


def open_session_ledger(
    audit_dir: Path, session_id: str, *, chain: bool = False, fsync_every: int = 1
) -> LedgerFile:
    """Open (creating if needed) the ledger of one session inside ``audit_dir``."""
    directory = ensure_private_dir(audit_dir)
    path = directory / session_file_name(session_id)
    if path.resolve().parent != directory.resolve():
        raise LedgerError(f"session id {session_id!r} would leave the audit dir")
    return LedgerFile(path, chain=chain, fsync_every=fsync_every)
