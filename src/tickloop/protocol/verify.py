"""``verify``: a ledger's lines checked one by one, and its records run through the state machine.

``Verifier`` checks what each line is (its encoding, the hash chain, the keyed macs, seq, session,
times, the policy fields) and hands each record to ``tickloop.protocol.transitions.RunMachine``,
which moves the record's run through the transition table. The record format, the rule vocabulary
and the keyed chain live in ``tickloop.protocol.ledger``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tickloop.errors import LedgerError
from tickloop.filenames import session_file_name
from tickloop.protocol.chain import ChainCheck
from tickloop.protocol.ledger import (
    FIELDS,
    FUTURE_SKEW_MS,
    MAX_POLICY_BYTES,
    MAX_REPORTED,
    SHA256_HEX,
    TIME_FORMAT,
    TIME_SLACK_MS,
    Oversized,
    Seal,
    canonical,
    canonical_or_none,
    checked_record,
    decode,
    noncanonical_reason,
)
from tickloop.protocol.policy import is_valid_policy_id
from tickloop.protocol.report import VerifyReport, Violation
from tickloop.protocol.transitions import TRANSITIONS, Phase, RunMachine, is_int, ms

__all__ = ["TRANSITIONS", "Checks", "Phase", "Verifier", "VerifyReport", "Violation", "verify"]


@dataclass(frozen=True, slots=True)
class Checks:
    """What a verification demands beyond the protocol's rules (the CLI flags and the moment)."""

    key: bytes | None = None  #: check every mac of the keyed parts (``--key-env``)
    seal: Seal | None = None  #: the file must match this seal (``--sealed``)
    strict: bool = False  #: an open run, a torn tail, an empty file are violations
    require_chain: bool = False  #: every record is in a chained part
    require_key: bool = False  #: every record is in a keyed part (needs ``key``)
    file_name: str | None = None  #: the file's own name, checked against its session id
    now_ms: int | None = None  #: the moment of verification: a later recordedAt (past the skew) is refused


class Verifier(RunMachine):
    """Replays records one by one through the run state machine and checks every invariant.

    ``feed`` each line, then ``finish`` once; ``verify`` does both for an iterable of lines.
    """

    def __init__(self, checks: Checks | None = None, *, max_reported: int = MAX_REPORTED) -> None:
        checks = checks or Checks()
        super().__init__(VerifyReport(max_reported=max_reported, sealed=checks.seal))
        self.checks = checks
        self.seal = checks.seal
        self.sealed_hash = hashlib.sha256() if checks.seal is not None else None
        self.sealed_lines = 0
        self.lines = 0
        self.last_seq = 0
        self.last_time = ""
        self.future = "" if checks.now_ms is None else iso_ms(checks.now_ms + FUTURE_SKEW_MS)
        self.good_policy: tuple[Any, ...] = ()  #: the policy fields last found well-formed
        self.policies: dict[str, tuple[Any, Any, int]] = {}  #: policy id -> (sha256, bytes, first line)
        self.session: str | None = None
        self.chain = ChainCheck(checks.key, self.fail)

    # -- one line ------------------------------------------------------------------------------------

    def feed(self, lineno: int, raw: bytes | Oversized) -> dict[str, Any] | None:
        """Check one line; returns its record when it could be read (``None`` otherwise)."""
        self.lines = lineno
        if isinstance(raw, Oversized):
            self._seal_line(lineno, None)
            self.fail(
                lineno,
                "verify.record_too_large",
                f"a record of {raw.size} bytes or more exceeds the {raw.cap}-byte cap (not read)",
            )
            self.chain.skip(None)
            self.last_seq += 1
            return None
        self._seal_line(lineno, raw)
        fast = canonical_or_none(raw)  # the common case: a canonical line, decoded and proven in one go
        try:
            rec = decode(raw) if fast is None else checked_record(fast)
        except LedgerError as exc:
            self.fail(lineno, "verify.malformed", str(exc))
            self.chain.skip(raw)
            self.last_seq += 1  # an unreadable line still occupies its slot: no cascade of seq errors
            return None
        if fast is None or not fast.keys() <= FIELDS:  # unknown fields: named by the exact check
            self._check_canonical(lineno, raw, rec)
        self.report.records += 1
        self.chain.check(lineno, raw, rec)
        self._check_seq(lineno, rec)
        self.run_record(lineno, rec)
        return rec

    def _check_canonical(self, lineno: int, raw: bytes, rec: dict[str, Any]) -> None:
        """The line is strict UTF-8 and byte-equal to the canonical encoding of what it decodes to."""
        if rec.keys() <= FIELDS:
            try:
                if canonical(rec) == raw:
                    return
            except (UnicodeEncodeError, ValueError):
                pass
        self.fail(lineno, "verify.noncanonical", noncanonical_reason(raw, rec))

    def _seal_line(self, lineno: int, raw: bytes | None) -> None:
        if self.sealed_hash is None or self.seal is None or self.sealed_lines >= self.seal.records:
            return
        if raw is None:
            self.fail(lineno, "verify.seal_mismatch", "a sealed line is too large to hash")
            self.sealed_hash = None
            return
        self.sealed_hash.update(raw + b"\n")
        self.sealed_lines += 1
        if self.sealed_lines == self.seal.records and self.sealed_hash.hexdigest() != self.seal.sha256:
            self.fail(
                lineno, "verify.seal_mismatch", f"the first {self.seal.records} lines differ from the seal"
            )

    def _check_seq(self, lineno: int, rec: Mapping[str, Any]) -> None:
        seq = int(rec["seq"])
        if seq != self.last_seq + 1:
            self.fail(lineno, "verify.seq_order", f"seq {seq} follows {self.last_seq}")
        self.last_seq = seq
        session = rec["sessionId"]
        if self.session is None:
            self.session = self.report.session = session
        elif session != self.session:
            self.fail(
                lineno, "verify.session_mixed", f"sessionId {session!r} in a ledger of {self.session!r}"
            )
        self._check_time(lineno, rec["recordedAt"])

    def _check_time(self, lineno: int, at: str) -> None:
        if TIME_FORMAT.fullmatch(at) is None:
            self.fail(lineno, "verify.bad_field", f"recordedAt {at[:40]!r} is not YYYY-MM-DDTHH:MM:SS.mmmZ")
            return
        if self.future and at > self.future:  # the fixed format orders as text
            self.fail(
                lineno,
                "verify.future_time",
                f"recordedAt {at} is after the moment of verification (+{FUTURE_SKEW_MS // 1000} s skew)",
            )
        if at >= self.last_time:  # the fixed format orders as text: no parsing on the common path
            self.last_time = at
        elif ms(at) < ms(self.last_time) - TIME_SLACK_MS:
            self.fail(lineno, "verify.time_order", f"recordedAt {at} is before the previous {self.last_time}")

    def check_policy(self, lineno: int, rec: Mapping[str, Any]) -> None:
        policy_id, sha, size = policy = (
            rec.get("policyId"),
            rec.get("timeStepSha256"),
            rec.get("timeStepBytes"),
        )
        if policy == self.good_policy:
            return
        if not (isinstance(policy_id, str) and is_valid_policy_id(policy_id)):
            self.fail(lineno, "verify.bad_field", f"policyId {policy_id!r} is not a policy id")
        elif not (isinstance(sha, str) and SHA256_HEX.fullmatch(sha)):
            self.fail(lineno, "verify.bad_field", "timeStepSha256 must be 64 lowercase hex digits")
        elif not (is_int(size) and 1 <= size <= MAX_POLICY_BYTES):
            self.fail(lineno, "verify.bad_field", f"timeStepBytes {size!r} is not in 1..{MAX_POLICY_BYTES}")
        else:
            self.good_policy = policy
            self._one_text_per_id(lineno, policy_id, sha, size)

    def _one_text_per_id(self, lineno: int, policy_id: str, sha: str, size: int) -> None:
        """Through a file, a policy id names one frozen text: one sha256 and one byte count."""
        known_sha, known_size, line = self.policies.setdefault(policy_id, (sha, size, lineno))
        if known_sha != sha:
            here, there = f"sha256 {sha[:12]}", f"{str(known_sha)[:12]}"
        elif known_size != size:  # the same digest with another byte count: named by what differs
            here, there = f"timeStepBytes {size}", f"{known_size}"
        else:
            return
        said = f"policy {policy_id!r} has {here} here, {there} on line {line}"
        self.fail(lineno, "verify.policy_conflict", said)

    # -- the end -------------------------------------------------------------------------------------

    def finish(self, *, torn_tail: bool = False) -> VerifyReport:
        report, checks = self.report, self.checks
        report.open_runs = [trace.run_id for trace in self.runs.values() if trace.phase is not Phase.CLOSED]
        if checks.strict:
            for trace in self.runs.values():
                if trace.phase is not Phase.CLOSED:
                    self.fail(
                        trace.line, "verify.open_run", f"run {trace.run_id} is still {trace.phase} at the end"
                    )
            if torn_tail:
                self.fail(self.last_seq + 1, "verify.torn_tail", "the last line is incomplete (no newline)")
        if self.lines == 0 and (checks.strict or checks.key is not None or checks.require_chain):
            self.fail(1, "verify.empty", "the file holds no record: nothing was verified")
        if self.seal is not None and self.sealed_hash is not None and self.sealed_lines < self.seal.records:
            self.fail(
                self.last_seq + 1,
                "verify.seal_mismatch",
                f"the file has {self.sealed_lines} lines; the seal covers {self.seal.records}",
            )
        self.chain.finish(require_chain=checks.require_chain, require_key=checks.require_key)
        self._check_file_name()
        report.chained, report.keyed = self.chain.fully
        report.notes = self.chain.describe(last_line=self.lines, ok=report.ok)
        if report.session is not None and report.name_checked is False:
            report.notes.append("file name not checked (not a session file name)")
        return report

    def _check_file_name(self) -> None:
        """A file named like a session's ledger holds that session's records (not a copy of another's)."""
        name, session = self.checks.file_name, self.session
        if name is None or session is None:
            return
        if not (name.startswith("session-") and name.endswith(".jsonl")):
            self.report.name_checked = False
            return
        self.report.name_checked = True
        try:
            expected = session_file_name(session)
        except LedgerError:
            expected = "(none: the session id is not well-formed)"
        if name != expected:
            self.fail(
                1,
                "verify.session_file",
                f"{name} holds the ledger of session {session[:80]!r}, whose file is {expected}",
            )


def iso_ms(moment_ms: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` of milliseconds since the epoch."""
    from datetime import UTC, datetime  # noqa: PLC0415

    moment = datetime.fromtimestamp(moment_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def verify(
    lines: Iterable[tuple[int, bytes | Oversized]],
    checks: Checks | None = None,
    *,
    key: bytes | None = None,
    seal: Seal | None = None,
    strict: bool = False,
    torn_tail: bool = False,
    max_reported: int = MAX_REPORTED,
) -> VerifyReport:
    """Replay ``(line number, line bytes)`` pairs through the run state machine and check every rule.

    Each line must be strict UTF-8 and byte-equal to the canonical encoding of its record, with known
    fields only. Each run's records must follow ``TRANSITIONS`` (armed -> scheduled -> enqueued ->
    terminal -> scheduled ... -> complete | stopped; scheduled -> cancelled -> stopped), with contiguous
    steps from 1, never beyond the requested count, a schedule only after a ``completed`` terminal (or
    the single ``--resume`` boundary before step 1 of a run armed with it), constant policy fields, and
    nothing after the close. Across the file: seq gapless from 1, one session (and, with
    ``checks.file_name``, the file named for it), at most one active run, times in order and not in the
    future, one text per policy id, every rule id from its record type's vocabulary, refusals
    consistent with the state they claim, the hash chain intact in each chained part, and, with
    ``checks.key``, every mac of each keyed part. ``checks.strict`` makes an open run, a torn tail and
    an empty file violations. Without ``checks``, ``key``, ``seal`` and ``strict`` make them. Only the
    first ``max_reported`` violations are kept; all are counted.
    """
    checks = checks or Checks(key=key, seal=seal, strict=strict)
    verifier = Verifier(checks, max_reported=max_reported)
    for lineno, raw in lines:
        verifier.feed(lineno, raw)
    return verifier.finish(torn_tail=torn_tail)
