"""The hash chain and the keyed macs of a ledger, checked part by part.

A ledger is one or more *parts*. The first starts at line 1 and is chained when that record carries
``prev``, keyed when it carries ``mac``. A ``ledger_mode`` record starts the next part: its ``chain``
and ``keyed`` say what holds from it on. So a chain or a key starts or ends only at an explicit
record, and each part is checked under its own rule: inside a chained part every record has a
``prev`` matching the line before (the ``ledger_mode`` record that ends a chain still carries one);
inside a keyed part, with the key, every record's ``mac`` matches. A ``prev`` or ``mac`` outside
such a part is a violation, so a chain cannot silently start, stop or resume. ``--require-chain``
and ``--require-key`` make any unchained or unkeyed part a violation.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tickloop.protocol.ledger import GENESIS, RecordType, chain_digest, mac_of, without_mac

MAX_PARTS = 1000  #: parts kept for the summary; a file switching more often is summarised as such

Fail = Callable[[int, str, str], None]


@dataclass(frozen=True, slots=True)
class Part:
    """Lines from ``line`` on (to the next part) are chained and/or keyed."""

    line: int
    chain: bool
    keyed: bool


class ChainCheck:
    """Checks each record's ``prev`` and ``mac`` against the part it is in."""

    def __init__(self, key: bytes | None, fail: Fail) -> None:
        self.key = key
        self.fail = fail
        self.parts: list[Part] = []
        self.current: Part | None = None
        self.prev_line: bytes | None = None
        self.lost = False  #: the previous line could not be hashed (too large, unreadable): skip one check
        self.macs_seen = False

    def skip(self, raw: bytes | None) -> None:
        """A line that could not be read as a record: the next ``prev`` is still checked against it."""
        self.prev_line, self.lost = raw, raw is None

    def check(self, lineno: int, raw: bytes, rec: Mapping[str, Any]) -> None:
        prev, mac = rec.get("prev"), rec.get("mac")
        chained, keyed = self._part_of(lineno, rec, has=(prev is not None, mac is not None))
        if prev is None:
            if chained:
                self.fail(lineno, "verify.chain_broken", "the hash chain stops here (no prev)")
        elif not chained:
            self.fail(
                lineno,
                "verify.chain_broken",
                "prev outside a chained part (a chain starts at line 1 or at a ledger_mode record)",
            )
        elif not self.lost and prev != (GENESIS if self.prev_line is None else chain_digest(self.prev_line)):
            self.fail(lineno, "verify.chain_broken", "prev does not match the previous line")
        self.macs_seen = self.macs_seen or mac is not None
        if self.key is not None:
            self._check_mac(lineno, raw, mac, keyed=keyed)
        self.prev_line, self.lost = raw, False

    def _part_of(self, lineno: int, rec: Mapping[str, Any], *, has: tuple[bool, bool]) -> tuple[bool, bool]:
        """(chained, keyed) for this record, opening a new part at line 1 and at a ``ledger_mode``."""
        if rec.get("type") != RecordType.LEDGER_MODE:
            if self.current is None:
                self._open(Part(lineno, *has))
            assert self.current is not None
            return self.current.chain, self.current.keyed
        well_formed = isinstance(rec.get("chain"), bool) and isinstance(rec.get("keyed"), bool)
        if not well_formed:
            self.fail(lineno, "verify.bad_field", "ledger_mode must carry chain and keyed as true or false")
        chain, keyed = rec.get("chain") is True, rec.get("keyed") is True
        before = self.current or Part(lineno, chain=False, keyed=False)
        if well_formed and self.current is not None and (chain, keyed) == (before.chain, before.keyed):
            self.fail(lineno, "verify.bad_field", "a ledger_mode record that changes nothing")
        self._open(Part(lineno, chain, keyed))
        return before.chain or chain, keyed

    def _open(self, part: Part) -> None:
        self.current = part
        if len(self.parts) < MAX_PARTS:
            self.parts.append(part)

    def _check_mac(self, lineno: int, raw: bytes, mac: Any, *, keyed: bool) -> None:
        assert self.key is not None
        if not keyed:
            if mac is not None:
                self.fail(
                    lineno, "verify.mac_mismatch", "a mac outside a keyed part (no ledger_mode starts one)"
                )
            return
        if not isinstance(mac, str):
            self.fail(lineno, "verify.mac_mismatch", "no mac: the record is not part of the keyed chain")
            return
        body = without_mac(raw)
        if body is None or not hmac.compare_digest(mac_of(body, self.key), mac):
            self.fail(lineno, "verify.mac_mismatch", "the mac does not match this record under the key")

    def finish(self, *, require_chain: bool, require_key: bool) -> None:
        """A keyed check of a file with no keyed part at all, and the parts the flags require."""
        if self.key is not None and self.parts and not any(part.keyed for part in self.parts):
            self.fail(
                1, "verify.mac_mismatch", "no record has a mac: the file is not keyed (or was stripped)"
            )
            return
        for part in self.parts:
            if require_chain and not part.chain:
                self.fail(
                    part.line, "verify.unchained", "--require-chain: the records from here have no hash chain"
                )
            if require_key and not part.keyed:
                self.fail(part.line, "verify.unkeyed", "--require-key: no mac from this line on")

    def describe(self, *, last_line: int, ok: bool) -> list[str]:
        """What the summary says of the chain and the macs: what held, and what was not checked."""
        out = []
        chained = _spans(self.parts, last_line, keyed=False)
        if not chained:
            out.append("no hash chain")
        elif chained != [f"1-{last_line}"]:
            out.append(f"hash chain on lines {', '.join(chained)} only")
        elif ok:
            out.append("hash chain intact")
        if self.key is not None:
            keyed = _spans(self.parts, last_line, keyed=True)
            if keyed and keyed != [f"1-{last_line}"]:
                out.append(f"keyed chain on lines {', '.join(keyed)} only")
            elif keyed and ok:
                out.append("keyed chain verified")
        else:
            out.append("macs not checked (no --key-env)" if self.macs_seen else "no macs")
        return out

    @property
    def fully(self) -> tuple[bool, bool]:
        """(every part chained, every part keyed and checked against the key)."""
        chain = bool(self.parts) and all(part.chain for part in self.parts)
        keyed = self.key is not None and bool(self.parts) and all(part.keyed for part in self.parts)
        return chain, keyed


def _spans(parts: list[Part], last_line: int, *, keyed: bool) -> list[str]:
    """``first-last`` line ranges of the parts that are chained (or keyed), adjacent parts merged."""
    spans: list[list[int]] = []
    for i, part in enumerate(parts):
        if not (part.keyed if keyed else part.chain):
            continue
        end = parts[i + 1].line - 1 if i + 1 < len(parts) else last_line
        if spans and spans[-1][1] == part.line - 1:
            spans[-1][1] = end
        else:
            spans.append([part.line, end])
    return [f"{first}-{end}" for first, end in spans]
