"""Ledger records (schema ``tickloop.audit.v1``), their canonical JSON, the rule vocabulary, the keyed
chain and the seal. ``tickloop.protocol.verify`` checks a ledger against the run state machine.

Canonical JSON is part of the documented contract: UTF-8, keys sorted, separators ``,`` and ``:``
with no spaces, no NaN or infinities, one record per line terminated by ``\\n``. The optional hash
chain puts ``prev = "sha256:<hex>"`` on each record: the digest of the previous line's bytes
(without its newline). ``GENESIS`` stands in for the line before the first.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import msgspec

from tickloop.errors import LedgerError

SCHEMA = "tickloop.audit.v1"
GENESIS = "sha256:" + "0" * 64


class RecordType(StrEnum):
    """Every kind of ledger record."""

    LOOP_ARMED = "loop_armed"  #: a run was admitted
    TICK_SCHEDULED = "tick_scheduled"  #: a timer will enqueue step N
    TICK_ENQUEUED = "tick_enqueued"  #: step N went into the agent
    TICK_TERMINAL = "tick_terminal"  #: step N's turn ended, with its status
    TICK_CANCELLED = "tick_cancelled_before_enqueue"  #: a pending enqueue was cancelled
    LOOP_STOPPED = "loop_stopped"  #: the run ended before its target
    LOOP_COMPLETE = "loop_complete"  #: the run reached its target
    COMMAND_REJECTED = "command_rejected"  #: a /tick line was refused
    LEDGER_MODE = "ledger_mode"  #: from this record on, the file is (or is no longer) chained or keyed


CLOSING = frozenset({RecordType.LOOP_STOPPED, RecordType.LOOP_COMPLETE})
_TYPES = frozenset(str(kind) for kind in RecordType)
#: Record types that must say which rule caused them.
NEEDS_RULE = frozenset(
    {
        RecordType.LOOP_STOPPED,
        RecordType.LOOP_COMPLETE,
        RecordType.TICK_CANCELLED,
        RecordType.COMMAND_REJECTED,
    }
)
#: Record types that belong to a run and carry its frozen policy fields.
RUN_RECORDS = frozenset(RecordType) - {RecordType.COMMAND_REJECTED, RecordType.LEDGER_MODE}
POLICY_FIELDS = ("policyId", "timeStepSha256", "timeStepBytes")
#: Every field a ``tickloop.audit.v1`` record may carry (a writer that adds one adds it here first).
FIELDS = frozenset(
    {
        *("schema", "type", "recordedAt", "sessionId", "seq", "prev", "mac"),
        *("runId", *POLICY_FIELDS, "rule", "next", "requested", "resume", "resumeBoundary"),
        *("step", "dueAt", "status", "usage", "usageReported", "toolCalls", "toolErrors"),
        *("replySha256", "toolResultSha256s", "steps", "tokens", "usageEstimated", "token"),
        *("chain", "keyed"),
    }
)


def record(
    kind: RecordType,
    *,
    recorded_at: datetime,
    session_id: str,
    **fields: Any,
) -> dict[str, Any]:
    """Build one record (without ``seq`` and ``prev``: the writer stamps those). Drops ``None``s."""
    body = {k: v for k, v in fields.items() if v is not None}
    if kind in NEEDS_RULE and "rule" not in body:
        raise LedgerError(f"a {kind} record must carry the rule that caused it")
    return {
        "schema": SCHEMA,
        "type": str(kind),
        "recordedAt": _utc(recorded_at),
        "sessionId": session_id,
        **body,
    }


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise LedgerError("recordedAt must be a timezone-aware time")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_DECODER = json.JSONDecoder()
#: The C encoder ``_ENCODER`` builds on every call, built once (records are trees: no cycle check).
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Any = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", True, False, False
    )
)


def canonical(obj: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes of a record (no trailing newline)."""
    if _C_ENCODE is not None and isinstance(obj, dict):
        return "".join(_C_ENCODE(obj, 0)).encode("utf-8")
    return _ENCODER.encode(obj).encode("utf-8")


def noncanonical_reason(line: bytes, rec: Mapping[str, Any]) -> str:
    """Why ``line`` (which decodes to ``rec``) is not the one canonical encoding of its record."""
    unknown = sorted(set(rec) - FIELDS)
    if unknown:
        return f"unknown field {unknown[0][:40]!r} (not part of {SCHEMA})"
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return "not strict UTF-8 (UTF-16, UTF-32, or invalid bytes)"
    return _text_reason(text) or _value_reason(text, rec)


def _text_reason(text: str) -> str | None:
    if text.startswith("\ufeff"):
        return "starts with a byte order mark"
    if "\x00" in text:
        return "not UTF-8 (UTF-16 or UTF-32)"
    if text.endswith("\r"):
        return "ends in a carriage return (a CRLF line ending)"
    return None


def _value_reason(text: str, rec: Mapping[str, Any]) -> str:
    duplicate = _duplicate_key(text)
    if duplicate is not None:
        return f"duplicate key {duplicate[:40]!r} (readers disagree on which value counts)"
    try:
        canonical(rec)
    except (UnicodeEncodeError, ValueError):
        return "holds a lone surrogate (not well-formed Unicode)"
    return "not byte-equal to its canonical JSON (spacing, key order, number form or escapes)"


def _duplicate_key(text: str) -> str | None:
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys) and not found:
            found.append(next(key for i, key in enumerate(keys) if key in keys[:i]))
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)
    return found[0] if found else None


def chain_digest(line: bytes) -> str:
    """The ``prev`` value for the record after ``line``."""
    return "sha256:" + hashlib.sha256(line).hexdigest()


MAX_DEPTH = 32  #: how deeply a record (ledger or transcript) may nest arrays and objects
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def nesting_depth(line: bytes) -> int:
    """How deeply ``line`` nests arrays and objects (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", line)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads_bounded(line: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` of one line, refusing (``LedgerError``) a line nested deeper than ``max_depth``
    before the parser could exhaust the stack. The bracket count makes the common case one C pass."""
    if line.count(b"[") + line.count(b"{") > max_depth and nesting_depth(line) > max_depth:
        raise LedgerError(f"nested deeper than {max_depth} levels")
    try:
        return _DECODER.decode(line.decode("utf-8"))  # the common case, without json.loads' detection
    except (ValueError, UnicodeDecodeError):
        pass  # UTF-16, UTF-32, a BOM, or not JSON: json.loads decides (and verify calls it noncanonical)
    except RecursionError:
        raise LedgerError(f"nested deeper than {max_depth} levels") from None
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LedgerError(f"not JSON: {exc}") from None
    except RecursionError:
        raise LedgerError(f"nested deeper than {max_depth} levels") from None


def decode(line: bytes) -> dict[str, Any]:
    """Parse one ledger line, or raise ``LedgerError`` saying what is wrong with it."""
    return checked_record(loads_bounded(line))


def checked_record(obj: Any) -> dict[str, Any]:
    """``obj`` if it is a ``tickloop.audit.v1`` record (the fields every record has, of their types)."""
    if not isinstance(obj, dict):
        raise LedgerError(f"a record must be a JSON object, got {type(obj).__name__}")
    if obj.get("schema") != SCHEMA:
        raise LedgerError(f"schema is {obj.get('schema')!r}, expected {SCHEMA!r}")
    if obj.get("type") not in _TYPES:
        raise LedgerError(f"unknown record type {obj.get('type')!r}")
    seq = obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise LedgerError(f"seq must be a positive integer, got {seq!r}")
    for key in ("recordedAt", "sessionId"):
        if not isinstance(obj.get(key), str):
            raise LedgerError(f"{key} must be a string")
    return obj


class _Float:
    """What the fast decoder makes of a float literal: the fast encoder cannot encode it, so a line
    holding one always takes the exact path (msgspec and ``json`` may print a float differently)."""

    __slots__ = ()


_FLOAT = _Float()
_FAST_DECODER = msgspec.json.Decoder(float_hook=lambda _text: _FLOAT)
_FAST_ENCODER = msgspec.json.Encoder(order="sorted")


def canonical_or_none(line: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """What ``line`` decodes to when it is byte-equal to its canonical encoding, else ``None``.

    One msgspec decode and one msgspec encode, compared with the line. This is exact: on values
    without floats msgspec's encoding (keys sorted by code point, compact, UTF-8, the same escapes)
    is byte-equal to ``canonical`` (tests/unit/protocol/test_canonical_fast.py pins it for every code
    point and by property), a float literal makes the encode fail, and msgspec refuses what ``json``
    would only refuse later (invalid UTF-8, escaped lone surrogates, NaN). ``None`` means "not shown
    canonical here": the caller decides with ``decode`` and ``canonical``.
    """
    if line.count(b"[") + line.count(b"{") > max_depth and nesting_depth(line) > max_depth:
        return None
    try:
        obj = _FAST_DECODER.decode(line)
        return obj if _FAST_ENCODER.encode(obj) == line else None
    except (msgspec.DecodeError, TypeError, UnicodeEncodeError, OverflowError):
        return None


# -- the vocabulary: every rule id a record may carry, by record type --------------------------------

ADMIT_OK = "admit.ok"
ADMIT_RESUME_BOUNDARY = "admit.resume_boundary"
NEXT_OK = "next.ok"
NEXT_RESUME_BOUNDARY = "next.resume_boundary"
NEXT_COUNT_OUT_OF_WINDOW = "next.count_out_of_window"
NEXT_TERMINAL_MISSING = "next.terminal_missing"
NEXT_TERMINAL_NOT_COMPLETED = "next.terminal_not_completed"
NEXT_TARGET_REACHED = "next.target_reached"
STOP_USER = "stop.user"
STOP_DISPOSED = "stop.disposed"
STOP_INCONSISTENT = "stop.inconsistent_turn"
STOP_NO_RUN = "stop.no_active_run"
STOP_TOKEN_BUDGET = "stop.token_budget"  # noqa: S105  (a rule id) — the experiments' token budget ends a run
CANCEL_STATE_CHANGED = "cancel.state_changed"
#: a person's message submitted while a step waited cancels it at once (the spec: a human message
#: cancels the pending step)
CANCEL_PERSON_MESSAGE = "cancel.person_message"
RECOVER_ORPHANED_RUN = "recover.orphaned_run"

ADMIT_REFUSALS = frozenset(
    {
        "admit.natural_context",
        "admit.no_closed_turn",
        "admit.terminal_not_completed",
        "admit.run_active",
        "admit.unknown_policy",
    }
)
COMMAND_RULES = frozenset(
    {
        "command.not_tick",
        "command.unknown_policy",
        "command.extra_argument",
        "command.duplicate_option",
        "command.option_takes_no_value",
        "command.missing_value",
        "command.unknown_option",
        "command.invalid_policy_id",
        "command.count_not_integer",
        "command.count_out_of_range",
    }
)
NEXT_RULES = frozenset(
    {
        NEXT_OK,
        NEXT_RESUME_BOUNDARY,
        NEXT_COUNT_OUT_OF_WINDOW,
        NEXT_TERMINAL_MISSING,
        NEXT_TERMINAL_NOT_COMPLETED,
        NEXT_TARGET_REACHED,
    }
)
#: Stops that can cut a run short wherever it is (a person, shutdown, a budget, a crash found on reopen).
INTERRUPTING_STOPS = frozenset({STOP_USER, STOP_DISPOSED, STOP_TOKEN_BUDGET, RECOVER_ORPHANED_RUN})
#: Why a pending step may be cancelled: the timer's re-check failed, or the run was stopped meanwhile.
CANCEL_RULES = frozenset(
    {
        CANCEL_STATE_CHANGED,
        CANCEL_PERSON_MESSAGE,
        STOP_USER,
        STOP_DISPOSED,
        STOP_TOKEN_BUDGET,
        NEXT_COUNT_OUT_OF_WINDOW,
        NEXT_TERMINAL_MISSING,
        NEXT_TERMINAL_NOT_COMPLETED,
        NEXT_TARGET_REACHED,
    }
)
#: The known rule ids of each record type that carries one.
RULES: Mapping[RecordType, frozenset[str]] = {
    RecordType.LOOP_ARMED: frozenset({ADMIT_OK, ADMIT_RESUME_BOUNDARY}),
    RecordType.TICK_SCHEDULED: frozenset({NEXT_OK, NEXT_RESUME_BOUNDARY}),
    RecordType.TICK_CANCELLED: CANCEL_RULES,
    RecordType.LOOP_STOPPED: INTERRUPTING_STOPS
    | {STOP_INCONSISTENT, CANCEL_STATE_CHANGED, CANCEL_PERSON_MESSAGE, NEXT_COUNT_OUT_OF_WINDOW}
    | {NEXT_TERMINAL_MISSING, NEXT_TERMINAL_NOT_COMPLETED, NEXT_TARGET_REACHED},
    RecordType.LOOP_COMPLETE: frozenset({NEXT_TARGET_REACHED}),
    RecordType.COMMAND_REJECTED: COMMAND_RULES | ADMIT_REFUSALS | {STOP_NO_RUN},
}
TERMINAL_STATUSES = frozenset({"completed", "error", "interrupted", "unknown"})
MAX_REQUESTED = 256  #: the grammar's bound on /tick N
MAX_POLICY_BYTES = 4096
MAX_REPORTED = 100  #: violations kept in full; the rest are only counted
FUTURE_SKEW_MS = 5 * 60 * 1000  #: how far past the moment of verification a recordedAt may lie (clock skew)
TIME_SLACK_MS = 1000  #: how far recordedAt may step back (a wall-clock correction) before it is a violation
DUE_SLACK_MS = 100  #: how early an enqueue may be recorded against its dueAt (timer and clock granularity)

TIME_FORMAT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", re.ASCII)
SHA256_HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)


# -- the keyed chain and the seal --------------------------------------------------------------------

MAC_PREFIX = "hmac-sha256:"
_MAC_KEY = b'"mac":"' + MAC_PREFIX.encode()
SEAL_PREFIX = "tickloop-seal v1"
_SEAL = re.compile(r"tickloop-seal v1 records=([1-9][0-9]{0,15}) sha256:([0-9a-f]{64})", re.ASCII)


def mac_of(body: bytes, key: bytes) -> str:
    """The ``mac`` of a record: HMAC-SHA256 of its canonical bytes without the ``mac`` field."""
    return MAC_PREFIX + hmac.digest(key, body, "sha256").hex()


def without_mac(line: bytes) -> bytes | None:
    """The canonical bytes a ``mac`` was computed over: ``line`` with its one ``mac`` member cut out."""
    start = line.find(_MAC_KEY)
    if start < 0 or line.find(_MAC_KEY, start + 1) >= 0:
        return None
    end = start + len(_MAC_KEY) + 65  # 64 hex digits and the closing quote
    if line[end : end + 1] == b",":
        return line[:start] + line[end + 1 :]
    if line[start - 1 : start] == b",":
        return line[: start - 1] + line[end:]
    return None


@dataclass(frozen=True, slots=True)
class Seal:
    """What ``tickloop audit seal`` prints: how many records, and the sha256 of exactly those lines."""

    records: int
    sha256: str

    def line(self) -> str:
        return f"{SEAL_PREFIX} records={self.records} sha256:{self.sha256}"

    @classmethod
    def parse(cls, text: str) -> Seal:
        match = _SEAL.fullmatch(text.strip())
        if match is None:
            raise LedgerError(
                f"not a seal line: {text.strip()[:80]!r} (expected '{SEAL_PREFIX} records=N sha256:<64 hex>')"
            )
        return cls(int(match.group(1)), match.group(2))


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the record size cap: the reader counted it without keeping it."""

    size: int
    cap: int
