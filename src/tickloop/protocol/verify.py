"""``verify``: a ledger's lines checked one by one, and its records run through the state machine.

``Verifier`` checks what each line is (its encoding, the hash chain, the keyed macs, seq, session,
times, the policy fields) and hands each record to ``tickloop.protocol.transitions.RunMachine``,
which moves the record's run through the transition table. The record format, the rule vocabulary
and the keyed chain live in ``tickloop.protocol.ledger``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any

from tickloop.errors import LedgerError
from tickloop.protocol.ledger import (
    GENESIS,
    MAX_POLICY_BYTES,
    MAX_REPORTED,
    SHA256_HEX,
    TIME_FORMAT,
    TIME_SLACK_MS,
    Oversized,
    Seal,
    chain_digest,
    decode,
    mac_of,
    without_mac,
)
from tickloop.protocol.policy import is_valid_policy_id
from tickloop.protocol.report import VerifyReport, Violation
from tickloop.protocol.transitions import TRANSITIONS, Phase, RunMachine, is_int, ms

__all__ = ["TRANSITIONS", "Phase", "Verifier", "VerifyReport", "Violation", "verify"]


class Verifier(RunMachine):
    """Replays records one by one through the run state machine and checks every invariant.

    ``feed`` each line, then ``finish`` once; ``verify`` does both for an iterable of lines.
    """

    def __init__(self, *, key: bytes | None, seal: Seal | None, max_reported: int) -> None:
        super().__init__(VerifyReport(max_reported=max_reported, sealed=seal))
        self.key = key
        self.seal = seal
        self.sealed_hash = hashlib.sha256() if seal is not None else None
        self.sealed_lines = 0
        self.last_seq = 0
        self.last_time = ""
        self.good_policy: tuple[Any, ...] = ()  #: the policy fields last found well-formed
        self.session: str | None = None
        self.prev_line: bytes | None = None
        self.chain_lost = False  #: the previous line could not be hashed (too large): skip one check

    # -- one line ------------------------------------------------------------------------------------

    def feed(self, lineno: int, raw: bytes | Oversized) -> dict[str, Any] | None:
        """Check one line; returns its record when it could be read (``None`` otherwise)."""
        if isinstance(raw, Oversized):
            self._seal_line(lineno, None)
            self.fail(
                lineno,
                "verify.record_too_large",
                f"a record of {raw.size} bytes or more exceeds the {raw.cap}-byte cap (not read)",
            )
            self.prev_line, self.chain_lost = None, True
            self.last_seq += 1
            return None
        self._seal_line(lineno, raw)
        try:
            rec = decode(raw)
        except LedgerError as exc:
            self.fail(lineno, "verify.malformed", str(exc))
            self.prev_line, self.chain_lost = raw, False
            self.last_seq += 1  # an unreadable line still occupies its slot: no cascade of seq errors
            return None
        self._record(lineno, raw, rec)
        return rec

    def _record(self, lineno: int, raw: bytes, rec: dict[str, Any]) -> None:
        self.report.records += 1
        self._check_chain(lineno, raw, rec)
        self._check_seq(lineno, rec)
        self.run_record(lineno, rec)

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

    def _check_chain(self, lineno: int, raw: bytes, rec: Mapping[str, Any]) -> None:
        prev = rec.get("prev")
        if prev is None:
            if self.report.chained or self.key is not None:
                self.fail(lineno, "verify.chain_broken", "the hash chain stops here (no prev)")
        else:
            if self.report.records == 1:
                self.report.chained = True
            expected = GENESIS if self.prev_line is None else chain_digest(self.prev_line)
            if prev != expected and not self.chain_lost:
                self.fail(lineno, "verify.chain_broken", "prev does not match the previous line")
        if self.key is not None:
            self._check_mac(lineno, raw, rec)
        self.prev_line, self.chain_lost = raw, False

    def _check_mac(self, lineno: int, raw: bytes, rec: Mapping[str, Any]) -> None:
        assert self.key is not None
        mac = rec.get("mac")
        if not isinstance(mac, str):
            self.fail(lineno, "verify.mac_mismatch", "no mac: the record is not part of the keyed chain")
            return
        body = without_mac(raw)
        if body is None or not hmac.compare_digest(mac_of(body, self.key), mac):
            self.fail(lineno, "verify.mac_mismatch", "the mac does not match this record under the key")
            return
        if self.report.records == 1:
            self.report.keyed = True

    def _check_seq(self, lineno: int, rec: Mapping[str, Any]) -> None:
        seq = int(rec["seq"])
        if seq != self.last_seq + 1:
            self.fail(lineno, "verify.seq_order", f"seq {seq} follows {self.last_seq}")
        self.last_seq = seq
        session = rec["sessionId"]
        if self.session is None:
            self.session = session
        elif session != self.session:
            self.fail(
                lineno, "verify.session_mixed", f"sessionId {session!r} in a ledger of {self.session!r}"
            )
        at = rec["recordedAt"]
        if TIME_FORMAT.fullmatch(at) is None:
            self.fail(lineno, "verify.bad_field", f"recordedAt {at[:40]!r} is not YYYY-MM-DDTHH:MM:SS.mmmZ")
            return
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

    def finish(self, *, torn_tail: bool, strict: bool) -> VerifyReport:
        report = self.report
        report.open_runs = [trace.run_id for trace in self.runs.values() if trace.phase is not Phase.CLOSED]
        if strict:
            for trace in self.runs.values():
                if trace.phase is not Phase.CLOSED:
                    self.fail(
                        trace.line, "verify.open_run", f"run {trace.run_id} is still {trace.phase} at the end"
                    )
            if torn_tail:
                self.fail(self.last_seq + 1, "verify.torn_tail", "the last line is incomplete (no newline)")
        if self.seal is not None and self.sealed_hash is not None and self.sealed_lines < self.seal.records:
            self.fail(
                self.last_seq + 1,
                "verify.seal_mismatch",
                f"the file has {self.sealed_lines} lines; the seal covers {self.seal.records}",
            )
        return report


def verify(
    lines: Iterable[tuple[int, bytes | Oversized]],
    *,
    key: bytes | None = None,
    seal: Seal | None = None,
    strict: bool = False,
    torn_tail: bool = False,
    max_reported: int = MAX_REPORTED,
) -> VerifyReport:
    """Replay ``(line number, line bytes)`` pairs through the run state machine and check every rule.

    Each run's records must follow ``TRANSITIONS`` (armed -> scheduled -> enqueued -> terminal ->
    scheduled ... -> complete | stopped; scheduled -> cancelled -> stopped), with contiguous steps from 1,
    never beyond the requested count, a schedule only after a ``completed`` terminal (or the single
    ``--resume`` boundary before step 1 of a run armed with it), constant policy fields, and nothing after
    the close. Across the file: seq gapless from 1, one session, at most one active run, times in order,
    every rule id from its record type's vocabulary, refusals consistent with the state they claim, the
    hash chain intact where present, and, with ``key``, every record's HMAC. ``strict`` makes an open run
    and a torn tail violations. Only the first ``max_reported`` violations are kept; all are counted.
    """
    verifier = Verifier(key=key, seal=seal, max_reported=max_reported)
    for lineno, raw in lines:
        verifier.feed(lineno, raw)
    return verifier.finish(torn_tail=torn_tail, strict=strict)
