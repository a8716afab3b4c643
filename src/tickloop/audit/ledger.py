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

import hashlib
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tickloop.errors import ConfigError, LedgerError
from tickloop.filenames import session_file_name
from tickloop.protocol.ledger import (
    GENESIS,
    MAX_REPORTED,
    SCHEMA,
    Oversized,
    RecordType,
    Seal,
    canonical,
    chain_digest,
    decode,
    mac_of,
)
from tickloop.protocol.verify import Checks, Verifier, VerifyReport

DIR_MODE = 0o700
FILE_MODE = 0o600


DEFAULT_MAX_RECORD_BYTES = 1 << 20  #: the largest record a reader accepts (1 MiB); ``--max-record-bytes``
_CHUNK = 1 << 20


@dataclass(slots=True)
class LedgerRead:
    """The lines of a ledger file, plus whatever torn tail a crash left."""

    lines: list[tuple[int, bytes | Oversized]] = field(default_factory=list)
    torn_tail: bytes | None = None
    torn_size: int = 0  #: bytes after the last newline (kept in ``torn_tail`` only up to the cap)
    path: Path | None = None  #: the file read, named in errors

    def records(self) -> list[dict[str, Any]]:
        """Decoded records; raises ``LedgerError`` naming the file and its first bad line."""
        out = []
        where = f"{self.path}: " if self.path is not None else ""
        for lineno, raw in self.lines:
            if isinstance(raw, Oversized):
                raise LedgerError(
                    f"{where}line {lineno}: a record of {raw.size} bytes exceeds the {raw.cap}-byte cap"
                )
            try:
                out.append(decode(raw))
            except LedgerError as exc:
                raise LedgerError(f"{where}line {lineno}: {exc}") from None
        return out


class LineReader:
    """The lines of a regular file, one at a time, in bounded memory.

    A line longer than ``max_record_bytes`` is skipped as it streams past and yielded as ``Oversized``:
    memory stays near ``max_record_bytes`` plus one read chunk whatever the file holds. Devices, pipes
    and directories are refused before anything is read (``/dev/zero`` would never end). After the
    iteration, ``torn_size`` counts the bytes after the last newline and ``torn_tail`` holds them when
    they fit under the cap.
    """

    def __init__(
        self, path: Path, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, what: str = "ledger"
    ) -> None:
        if max_record_bytes < 1:
            raise LedgerError("the record size cap must be at least 1 byte")
        self.path = path
        self.cap = max_record_bytes
        self.what = what
        self.torn_tail: bytes | None = None
        self.torn_size = 0
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            raise LedgerError(f"cannot read {what} {path}: {exc.strerror}") from None
        if stat.S_ISDIR(mode):
            raise LedgerError(f"cannot read {what} {path}: it is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise LedgerError(f"cannot read {what} {path}: not a regular file (a device, pipe or socket)")

    def __iter__(self) -> Iterator[tuple[int, bytes | Oversized]]:
        cap, lineno, buf, skipped = self.cap, 1, b"", -1  # skipped >= 0: inside an oversized line
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise LedgerError(f"cannot read {self.what} {self.path}: {exc.strerror}") from None
        with handle:
            while chunk := handle.read(_CHUNK):
                if skipped >= 0:
                    newline = chunk.find(b"\n")
                    if newline < 0:
                        skipped += len(chunk)
                        continue
                    yield lineno, Oversized(skipped + newline, cap)
                    lineno, skipped, chunk = lineno + 1, -1, chunk[newline + 1 :]
                parts = (buf + chunk if buf else chunk).split(b"\n")
                buf = parts.pop()
                for part in parts:
                    yield lineno, part if len(part) <= cap else Oversized(len(part), cap)
                    lineno += 1
                if len(buf) > cap:
                    skipped, buf = len(buf), b""
        if skipped >= 0:
            yield lineno, Oversized(skipped, cap)  # an oversized last line is no torn write
        elif buf:
            self.torn_tail, self.torn_size = buf, len(buf)


def read_ledger(path: Path, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> LedgerRead:
    """Read a ledger file. A last line without its newline is reported as ``torn_tail``."""
    reader = LineReader(path, max_record_bytes=max_record_bytes)
    result = LedgerRead(lines=list(reader), path=path)
    result.torn_tail, result.torn_size = reader.torn_tail, reader.torn_size
    return result


def verify_file(
    path: Path,
    *,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    key: bytes | None = None,
    seal: Seal | None = None,
    strict: bool = False,
    require_chain: bool = False,
    require_key: bool = False,
    now_ms: int | None = None,
    file_name: str | None = None,
    max_reported: int = MAX_REPORTED,
) -> tuple[VerifyReport, LedgerRead]:
    """Verify a ledger file in bounded memory (see ``tickloop.protocol.verify.verify``): its name (or
    ``file_name``, the name it is known by) is checked against its session, its times against
    ``now_ms`` (default: now).

    The returned ``LedgerRead`` carries only the torn tail: the lines stream through and are not kept.
    """
    reader = LineReader(path, max_record_bytes=max_record_bytes)
    checks = file_checks(
        path, key=key, seal=seal, strict=strict, require_chain=require_chain, require_key=require_key
    )
    if now_ms is not None or file_name is not None:
        checks = replace(
            checks,
            now_ms=checks.now_ms if now_ms is None else now_ms,
            file_name=file_name or checks.file_name,
        )
    verifier = Verifier(checks, max_reported=max_reported)
    for lineno, raw in reader:
        verifier.feed(lineno, raw)
    report = verifier.finish(torn_tail=reader.torn_size > 0)
    return report, LedgerRead(torn_tail=reader.torn_tail, torn_size=reader.torn_size)


def file_checks(
    path: Path,
    *,
    key: bytes | None = None,
    seal: Seal | None = None,
    strict: bool = False,
    require_chain: bool = False,
    require_key: bool = False,
) -> Checks:
    """The checks of one ledger file: its name, and the moment of verification (now)."""
    if require_key and key is None:
        raise ConfigError("--require-key needs the key: give --key-env NAME")
    return Checks(
        key=key,
        seal=seal,
        strict=strict,
        require_chain=require_chain,
        require_key=require_key,
        file_name=path.name,
        now_ms=time.time_ns() // 1_000_000,
    )


def seal_file(path: Path, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Seal:
    """The seal of a ledger as it is now: its complete lines, counted and hashed."""
    digest, count = hashlib.sha256(), 0
    for lineno, raw in LineReader(path, max_record_bytes=max_record_bytes):
        if isinstance(raw, Oversized):
            raise LedgerError(f"{path}: line {lineno} exceeds the {raw.cap}-byte record cap; not sealing")
        digest.update(raw + b"\n")
        count = lineno
    if count == 0:
        raise LedgerError(f"{path}: no complete record to seal")
    return Seal(count, digest.hexdigest())


class LedgerFile:
    """An open ledger: appends stamp ``seq`` (and ``prev`` when chained) and are fsynced."""

    def __init__(
        self, path: Path, *, chain: bool = False, fsync_every: int = 1, key: bytes | None = None
    ) -> None:
        if fsync_every < 1:
            raise LedgerError("fsync_every must be at least 1")
        self.path = path
        self.key = key
        self.chain = chain or key is not None  #: a keyed ledger is always chained
        self.fsync_every = fsync_every
        self._unsynced = 0
        self.torn_repaired = False
        self._seq, self._prev, last = self._recover_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        path.chmod(FILE_MODE)
        if last is not None:
            self._mark_mode(last)

    def _mark_mode(self, last: Mapping[str, Any]) -> None:
        """Turning the chain or the key on or off for an existing file starts a new part of it with a
        ``ledger_mode`` record, so verify checks each part under its own rule (no false alarm, and
        no silent downgrade). It carries a ``prev`` when either part is chained, a ``mac`` when the
        new one is keyed, and the time of the record before it (the change takes effect right after)."""
        if last.get("type") == RecordType.LEDGER_MODE:
            was = (last.get("chain") is True, last.get("keyed") is True)
        else:
            was = ("prev" in last, "mac" in last)
        now = (self.chain, self.key is not None)
        if was == now:
            return
        mode = {
            "schema": SCHEMA,
            "type": str(RecordType.LEDGER_MODE),
            "recordedAt": last["recordedAt"],
            "sessionId": last["sessionId"],
            "chain": now[0],
            "keyed": now[1],
        }
        self._append(mode, chained=was[0] or now[0])

    def _recover_tail(self, path: Path) -> tuple[int, str, dict[str, Any] | None]:
        if not path.exists():
            return 0, GENESIS, None
        read = read_ledger(path)
        if read.torn_size:
            # Never acknowledged (append returns only after fsync): cut it so the next line is clean.
            with path.open("r+b") as handle:
                handle.truncate(path.stat().st_size - read.torn_size)
                os.fsync(handle.fileno())
            self.torn_repaired = True
        if not read.lines:
            return 0, GENESIS, None
        lineno, last = read.lines[-1]
        if isinstance(last, Oversized):
            raise LedgerError(f"{path}: line {lineno} exceeds the {last.cap}-byte record cap; not appending")
        try:
            rec = decode(last)
        except LedgerError as exc:
            raise LedgerError(f"{path}: line {lineno} is not a valid record ({exc}); not appending") from None
        return int(rec["seq"]), chain_digest(last), rec

    @property
    def seq(self) -> int:
        """The seq of the last record written."""
        return self._seq

    def append(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        """Stamp, encode and durably append one record; returns the record as written."""
        return self._append(rec, chained=self.chain)

    def _append(self, rec: Mapping[str, Any], *, chained: bool) -> dict[str, Any]:
        stamped = {**rec, "seq": self._seq + 1}
        if chained:
            stamped["prev"] = self._prev
        if self.key is not None:
            stamped["mac"] = mac_of(canonical(stamped), self.key)
        line = canonical(stamped)
        if b"\n" in line:  # canonical JSON escapes newlines; this guards the one-line invariant
            raise LedgerError("a ledger record must encode to one line")
        os.write(self._fd, line + b"\n")
        self._unsynced += 1
        if self._unsynced >= self.fsync_every:
            self.sync()
        self._seq += 1
        self._prev = chain_digest(line)
        return stamped

    def sync(self) -> None:
        """Make every appended record durable now."""
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = 0

    def settled(self) -> None:
        """Every record appended so far was made durable by the caller (an fsync of this file through
        another descriptor: ``tickloop.harness.durable``), so ``sync`` and ``close`` need not fsync."""
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
    audit_dir: Path, session_id: str, *, chain: bool = False, fsync_every: int = 1, key: bytes | None = None
) -> LedgerFile:
    """Open (creating if needed) the ledger of one session inside ``audit_dir``."""
    directory = ensure_private_dir(audit_dir)
    path = directory / session_file_name(session_id)
    if path.resolve().parent != directory.resolve():
        raise LedgerError(f"session id {session_id!r} would leave the audit dir")
    return LedgerFile(path, chain=chain, fsync_every=fsync_every, key=key)


def audit_key(env_name: str, environ: Mapping[str, str] | None = None) -> bytes:
    """The HMAC key held by the environment variable ``env_name`` (``[tick] auditKeyEnv``)."""
    value = (os.environ if environ is None else environ).get(env_name, "")
    if not value:
        raise ConfigError(f"audit key variable {env_name} (auditKeyEnv) is not set or empty")
    return value.encode("utf-8")
