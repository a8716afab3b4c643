"""The chain and mac checks of a ledger, part by part, each refusal by its line, rule and words.

A mutation run of ``protocol/chain.py`` found the keyed checks ("no mac", "a mac outside a keyed
part") and the chain's own messages pinned by no in-process test: the golden ledgers reach them only
through a subprocess. A person reading verify's output relies on all three: which line, which rule,
and what it says happened there.
"""

from __future__ import annotations

from typing import Any

import pytest

from tickloop.protocol.chain import MAX_PARTS, ChainCheck
from tickloop.protocol.ledger import GENESIS, RecordType, canonical, chain_digest, mac_of

KEY = b"k" * 32
NO_PREV = "the hash chain stops here (no prev)"
PREV_OUTSIDE = "prev outside a chained part (a chain starts at line 1 or at a ledger_mode record)"
PREV_WRONG = "prev does not match the previous line"
NO_MAC = "no mac: the record is not part of the keyed chain"
MAC_OUTSIDE = "a mac outside a keyed part (no ledger_mode starts one)"
MAC_WRONG = "the mac does not match this record under the key"
NOT_KEYED = "no record has a mac: the file is not keyed (or was stripped)"
REQUIRE_CHAIN = "--require-chain: the records from here have no hash chain"
REQUIRE_KEY = "--require-key: no mac from this line on"

#: how each line of a case is written: chained (c) and/or keyed (k), or plain (-); "m" is a
#: ledger_mode record switching to what its letters after the colon say
Plan = list[str]
Fail = tuple[int, str, str]


def _ledger(plan: Plan) -> list[tuple[bytes, dict[str, Any]]]:
    lines: list[tuple[bytes, dict[str, Any]]] = []
    for seq, written in enumerate(plan, start=1):
        how = written
        rec: dict[str, Any] = {"seq": seq, "type": "tick_scheduled"}
        if how.startswith("m:"):
            rec = {"seq": seq, "type": RecordType.LEDGER_MODE.value}
            rec["chain"], rec["keyed"] = "c" in written[2:], "k" in written[2:]
            # it carries prev if the part it ends was chained, and a mac if the part it starts is keyed
            how = ("c" if lines and "prev" in lines[-1][1] else "") + ("k" if rec["keyed"] else "")
        if "c" in how:
            rec["prev"] = GENESIS if not lines else chain_digest(lines[-1][0])
        if "k" in how or "K" in how:
            mac = mac_of(canonical(rec), KEY)
            rec["mac"] = mac if "k" in how else "hmac-sha256:" + "0" * 64  # K: a wrong mac
        lines.append((canonical(rec), rec))
    return lines


def _fails(plan: Plan, *, key: bytes | None = KEY, chain: bool = False, keyed: bool = False) -> list[Fail]:
    """Verify's chain findings for a ledger written to ``plan``, checked with ``key`` (or none) and
    the --require-chain / --require-key flags."""
    fails: list[Fail] = []
    check = ChainCheck(key, lambda line, rule, message: fails.append((line, rule, message)))
    for lineno, (raw, rec) in enumerate(_ledger(plan), start=1):
        check.check(lineno, raw, rec)
    check.finish(require_chain=chain, require_key=keyed)
    return fails


@pytest.mark.parametrize(
    ("plan", "key", "expected"),
    [
        (["ck", "ck", "ck"], KEY, []),
        (["c", "c", "-"], None, [(3, "verify.chain_broken", NO_PREV)]),
        (["-", "c"], None, [(2, "verify.chain_broken", PREV_OUTSIDE)]),
        (["ck", "-k"], KEY, [(2, "verify.chain_broken", NO_PREV)]),
        (["k", "k", "-"], KEY, [(3, "verify.mac_mismatch", NO_MAC)]),
        (["ck", "cK"], KEY, [(2, "verify.mac_mismatch", MAC_WRONG)]),
        # a mac in a file that never turned its key on: refused where it stands, and the file is unkeyed
        (
            ["-", "-", "k"],
            KEY,
            [(3, "verify.mac_mismatch", MAC_OUTSIDE), (1, "verify.mac_mismatch", NOT_KEYED)],
        ),
        (["c", "c"], KEY, [(1, "verify.mac_mismatch", NOT_KEYED)]),
        # a key turned on by a ledger_mode record: lines before it need no mac, a mac there is refused
        (["c", "m:ck", "ck"], KEY, []),
        (["c", "ck", "m:ck", "ck"], KEY, [(2, "verify.mac_mismatch", MAC_OUTSIDE)]),
        (["ck", "c", "m:c", "c"], KEY, [(2, "verify.mac_mismatch", NO_MAC)]),
    ],
)
def test_each_line_is_checked_under_the_rule_of_its_part(
    plan: Plan, key: bytes | None, expected: list[Fail]
) -> None:
    """Every violation names its line, its rule and what broke, and nothing else is reported."""
    assert _fails(plan, key=key) == expected


def test_a_chain_that_is_not_the_previous_lines_digest_is_named_at_the_line_that_breaks() -> None:
    lines = _ledger(["c", "c", "c"])
    fails: list[Fail] = []
    check = ChainCheck(None, lambda line, rule, message: fails.append((line, rule, message)))
    check.check(1, lines[0][0], lines[0][1])
    check.check(2, lines[2][0], lines[2][1])  # line 2 missing: line 3's prev names it
    assert fails == [(2, "verify.chain_broken", PREV_WRONG)]


def test_without_a_key_no_mac_is_checked_and_the_summary_says_so() -> None:
    """Stripped or wrong macs pass a check without the key, but the summary never claims them."""
    fails: list[Fail] = []
    check = ChainCheck(None, lambda line, rule, message: fails.append((line, rule, message)))
    for lineno, (raw, rec) in enumerate(_ledger(["ck", "cK", "c"]), start=1):
        check.check(lineno, raw, rec)
    assert fails == []
    assert check.describe(last_line=3, ok=True) == ["hash chain intact", "macs not checked (no --key-env)"]


@pytest.mark.parametrize(
    ("plan", "chain", "keyed", "expected"),
    [
        (["ck", "ck"], True, True, []),
        (["k", "k"], True, False, [(1, "verify.unchained", REQUIRE_CHAIN)]),
        (["c", "m:ck", "ck"], False, True, [(1, "verify.unkeyed", REQUIRE_KEY)]),
    ],
)
def test_the_require_flags_name_the_first_line_of_each_part_that_lacks_what_they_require(
    plan: Plan, chain: bool, keyed: bool, expected: list[Fail]
) -> None:
    assert _fails(plan, chain=chain, keyed=keyed) == expected


@pytest.mark.parametrize("plan", [["c", "c", "m:-", "-"], ["m:-", "-"]])
def test_a_ledger_mode_record_ending_a_chain_or_opening_the_file_is_clean(plan: Plan) -> None:
    """The record that ends a chain still carries its prev, checked as the chain's last link; one on
    line 1 opens the first part. (A mutation run of ``_part_of`` found neither tried.)"""
    assert _fails(plan, key=None) == []


def _ignore(line: int, rule: str, message: str) -> None:
    """A ChainCheck's fail callback that keeps nothing."""


@pytest.mark.parametrize(
    ("plan", "key", "said"),
    [
        (["c", "c", "m:-", "-", "m:c", "c"], None, ["hash chain on lines 1-2, 5-6 only", "no macs"]),
        (["c", "m:ck", "ck", "m:c", "c", "m:ck", "ck"], KEY,
         ["hash chain intact", "keyed chain on lines 2-3, 6-7 only"]),
    ],
)  # fmt: skip
def test_the_summary_names_the_lines_each_chain_and_key_covers(
    plan: Plan, key: bytes | None, said: list[str]
) -> None:
    """A file chained or keyed only in parts says which lines, span by span (line 5 of the first plan
    starts a chain without a prev: the summary still names the part)."""
    check = ChainCheck(key, _ignore)
    for lineno, (raw, rec) in enumerate(_ledger(plan), start=1):
        check.check(lineno, raw, rec)
    assert check.describe(last_line=len(plan), ok=True) == said


def test_at_most_max_parts_parts_are_kept_for_the_summary() -> None:
    check = ChainCheck(None, _ignore)
    for lineno, (raw, rec) in enumerate(_ledger(["-"] + ["m:c", "m:-"] * 501), start=1):
        check.check(lineno, raw, rec)
    assert len(check.parts) == MAX_PARTS == 1000


def test_a_file_with_violations_claims_neither_chain_nor_key() -> None:
    """Chained and keyed throughout, but a mac is wrong: the summary claims nothing it did not prove."""
    check = ChainCheck(KEY, _ignore)
    for lineno, (raw, rec) in enumerate(_ledger(["ck", "cK"]), start=1):
        check.check(lineno, raw, rec)
    assert check.describe(last_line=2, ok=False) == []
    assert check.describe(last_line=2, ok=True) == ["hash chain intact", "keyed chain verified"]


def test_line_1_must_link_to_the_genesis_digest() -> None:
    """Line 1's prev is checked like any other: a chain cannot start from an arbitrary digest."""
    raw, rec = _ledger(["c"])[0]
    rec = {**rec, "prev": "sha256:" + "1" * 64}
    fails: list[Fail] = []
    check = ChainCheck(None, lambda line, rule, message: fails.append((line, rule, message)))
    check.check(1, canonical(rec), rec)
    assert fails == [(1, "verify.chain_broken", PREV_WRONG)]
    assert raw != canonical(rec)
