"""The ledger as strict evidence: one canonical form per line, bound to its session, no silent downgrade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.audit import verify_file
from tickloop.protocol.ledger import canonical, chain_digest, mac_of
from tickloop.protocol.verify import Checks, VerifyReport, verify

GOLDEN = Path(__file__).parents[2] / "golden" / "ledgers"
KEY = b"golden-audit-key"
UNCHAINED = (GOLDEN / "valid_unchained.jsonl").read_bytes().splitlines()
KEYED = (GOLDEN / "valid_keyed.jsonl").read_bytes().splitlines()


def run(lines: list[bytes], **checks: object) -> VerifyReport:
    return verify(enumerate(lines, start=1), Checks(**checks))  # type: ignore[arg-type]


def rules(report: VerifyReport) -> list[tuple[int, str]]:
    return [(v.line, v.rule) for v in report.violations]


def _edit(line: int, old: bytes, new: bytes) -> list[bytes]:
    lines = list(UNCHAINED)
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    return lines


def _utf16(line: int) -> list[bytes]:
    lines = list(UNCHAINED)
    lines[line - 1] = lines[line - 1].decode().encode("utf-16-le")
    return lines


def _reordered(line: int) -> list[bytes]:
    """Line ``line`` with its first key moved to the end."""
    lines = list(UNCHAINED)
    moved = lines[line - 1].replace(b'"policyId":"default",', b"")
    lines[line - 1] = moved[:-1] + b',"policyId":"default"}'
    return lines


#: Every other encoding of a record the reviewer found accepted, each now noncanonical on its line.
NONCANONICAL = {
    "a duplicate type key (first-wins readers see a refusal)": (
        _edit(3, b'{"policyId"', b'{"type":"command_rejected","policyId"'),
        "duplicate key 'type'",
    ),
    "a line in UTF-16": (_utf16(3), "UTF-16"),
    "a line in UTF-32": (
        [*UNCHAINED[:2], UNCHAINED[2].decode().encode("utf-32-le"), *UNCHAINED[3:]],
        "UTF-",
    ),
    "a byte order mark": (
        [*UNCHAINED[:2], b"\xef\xbb\xbf" + UNCHAINED[2], *UNCHAINED[3:]],
        "byte order mark",
    ),
    "a CRLF line ending": ([*UNCHAINED[:2], UNCHAINED[2] + b"\r", *UNCHAINED[3:]], "carriage return"),
    "a space after a colon": (_edit(3, b'"step":1', b'"step": 1'), "not byte-equal"),
    "keys out of order": (_reordered(3), "not byte-equal"),
    "an escaped key": (_edit(3, b'"type"', b'"\\u0074ype"'), "not byte-equal"),
    "a lone surrogate": (_edit(12, b'"token":"0"', b'"token":"\\ud800"'), "lone surrogate"),
    "an unknown field": (_edit(3, b'"step":1', b'"step":1,"sudo":true'), "unknown field 'sudo'"),
    "a number in another form": (_edit(3, b'"step":1', b'"step":1e0'), "not byte-equal"),
}


@pytest.mark.parametrize("name", sorted(NONCANONICAL))
def test_each_other_encoding_is_noncanonical_on_its_line(name: str) -> None:
    """A line that is not byte-equal to its canonical encoding is verify.noncanonical, saying why."""
    lines, why = NONCANONICAL[name]
    report = run(lines)
    found = [v for v in report.violations if v.rule == "verify.noncanonical"]
    assert [v.line for v in found] == [12 if "surrogate" in name else 3], report.violations
    assert why in found[0].message


def test_the_duplicate_key_case_counts_what_a_first_wins_reader_would_not() -> None:
    """The reviewer's example: a doubled type key is flagged, so no count rests on last-wins parsing."""
    lines, _ = NONCANONICAL["a duplicate type key (first-wins readers see a refusal)"]
    assert ("verify.noncanonical") in {v.rule for v in run(lines).violations}


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


@given(token=_values)
def test_a_canonical_line_is_accepted_and_any_respacing_is_not(token: object) -> None:
    """Whatever a field holds, its canonical line passes; the same record pretty-printed does not."""
    rec = json.loads(UNCHAINED[11])
    rec["token"] = token
    line = canonical(rec)
    lines = [*UNCHAINED[:11], line, *UNCHAINED[12:]]
    assert "verify.noncanonical" not in {v.rule for v in run(lines).violations}
    spaced = json.dumps(rec, sort_keys=True, ensure_ascii=False, indent=None).encode()
    if spaced != line:
        lines[11] = spaced
        assert (12, "verify.noncanonical") in rules(run(lines))


# -- item 2: the file is bound to its session -----------------------------------------------------------


def test_a_copy_of_another_sessions_keyed_ledger_is_caught_by_its_name(tmp_path: Path) -> None:
    """Session golden's keyed ledger under session A's file name fails --strict --key-env, naming both."""
    path = tmp_path / "session-A.jsonl"
    path.write_bytes((GOLDEN / "valid_keyed.jsonl").read_bytes())
    report, _ = verify_file(path, key=KEY, strict=True)
    assert rules(report) == [(1, "verify.session_file")]
    assert (
        "holds the ledger of session 'golden', whose file is session-golden.jsonl"
        in report.violations[0].message
    )
    right = tmp_path / "session-golden.jsonl"
    right.write_bytes(path.read_bytes())
    ok, _ = verify_file(right, key=KEY, strict=True)
    assert ok.ok
    assert "session 'golden'" in ok.summary()
    assert "keyed chain verified" in ok.summary()


def test_the_mac_covers_the_session_id() -> None:
    """Rewriting sessionId on every line (chain recomputed) breaks every mac: the key binds the session."""
    out, prev = [], "sha256:" + "0" * 64
    for line in KEYED:
        rec = json.loads(line)
        rec["sessionId"], rec["prev"] = "A", prev
        encoded = canonical(rec)
        out.append(encoded)
        prev = chain_digest(encoded)
    report = run(out, key=KEY)
    assert {v.rule for v in report.violations} == {"verify.mac_mismatch"}
    assert report.violation_count == len(KEYED)
    assert run(out).ok  # without the key only the (recomputed) chain is checked: anyone can redo it


# -- item 3: no silent downgrade -------------------------------------------------------------------------


def _strip(lines: list[bytes], *names: str, rechain: bool = False) -> list[bytes]:
    out, prev = [], "sha256:" + "0" * 64
    for line in lines:
        rec = {k: v for k, v in json.loads(line).items() if k not in names}
        if rechain:
            rec["prev"] = prev
        encoded = canonical(rec)
        out.append(encoded)
        prev = chain_digest(encoded)
    return out


def test_a_chain_stripped_of_every_prev_says_so_and_fails_require_chain() -> None:
    """Without prev fields the summary says "no hash chain"; --require-chain makes it a violation."""
    stripped = _strip(KEYED, "prev", "mac")
    plain = run(stripped)
    assert plain.ok
    assert "no hash chain" in plain.summary()
    assert "hash chain intact" not in plain.summary()
    assert rules(run(stripped, require_chain=True)) == [(1, "verify.unchained")]


def test_macs_stripped_and_the_chain_recomputed_never_read_as_keyed() -> None:
    """Stripped macs: the plain summary says "no macs"; with the key, the file is refused as unkeyed."""
    stripped = _strip(KEYED, "mac", rechain=True)
    plain = run(stripped)
    assert plain.ok
    assert plain.summary().endswith("hash chain intact, no macs")
    assert rules(run(stripped, key=KEY)) == [(1, "verify.mac_mismatch")]


def test_macs_present_but_unchecked_are_named() -> None:
    """A keyed file checked without --key-env says its macs were not checked."""
    assert "macs not checked (no --key-env)" in run(KEYED).summary()


def test_a_chained_file_stays_chained_to_its_end() -> None:
    """Records after line 1 cannot drop prev, and an unchained file cannot grow one mid-way."""
    lines = (GOLDEN / "valid.jsonl").read_bytes().splitlines()
    tail = _strip(lines[8:], "prev")
    dropped = run([*lines[:8], *tail])
    assert (9, "verify.chain_broken") in rules(dropped)
    grown = list(UNCHAINED)
    rec = json.loads(grown[8])
    rec["prev"] = chain_digest(grown[7])
    grown[8] = canonical(rec)
    assert rules(run(grown)) == [(9, "verify.chain_broken")]


# -- item 7: an empty file -------------------------------------------------------------------------------


@pytest.mark.parametrize("checks", [{"strict": True}, {"key": KEY}, {"require_chain": True}])
def test_an_empty_file_is_a_violation_when_anything_is_required(checks: dict[str, object]) -> None:
    """0 bytes under --strict, a key or --require-chain is verify.empty, not "ok: 0 records"."""
    assert rules(run([], **checks)) == [(1, "verify.empty")]


def test_an_empty_file_without_requirements_is_ok_and_says_zero_records() -> None:
    """Plain verify of a 0-byte file (a session that never armed a run) still passes."""
    assert run([]).summary().startswith("ok: 0 records")


def test_mac_of_is_over_the_canonical_bytes_without_the_mac() -> None:
    """The keyed golden's first mac is the HMAC of its canonical line without the mac member."""
    rec = json.loads(KEYED[0])
    mac = rec.pop("mac")
    assert mac == mac_of(canonical(rec), KEY)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (b',"replySha256":"xyz"', "replySha256 must be 64 lowercase hex digits"),
        (b',"toolResultSha256s":[]', "toolResultSha256s must be a non-empty list"),
        (b',"toolCalls":2,"toolResultSha256s":["' + b"a" * 64 + b'"]', "lists 1 results for 2 tool calls"),
    ],
)
def test_content_digests_on_a_terminal_are_checked_for_form(fields: bytes, problem: str) -> None:
    """A tick_terminal's reply and tool result digests must be sha256 hex, one per tool call."""
    lines = list(UNCHAINED)
    rec = json.loads(lines[3] + b"")
    rec.update(json.loads(b"{" + fields[1:] + b"}"))
    lines[3] = canonical(rec)
    report = run(lines)
    assert rules(report) == [(4, "verify.bad_field")]
    assert problem in report.violations[0].message


def test_a_ledger_mode_record_must_say_what_it_changes() -> None:
    """A ledger_mode record without boolean chain and keyed, or one that changes nothing, is bad_field."""
    at = json.loads(UNCHAINED[10])["recordedAt"]
    base = {"schema": "tickloop.audit.v1", "type": "ledger_mode", "recordedAt": at, "sessionId": "golden"}
    for fields, problem in (
        ({"chain": "yes", "keyed": False}, "ledger_mode must carry chain and keyed as true or false"),
        ({"chain": False, "keyed": False}, "a ledger_mode record that changes nothing"),
    ):
        lines = [*UNCHAINED[:11], canonical({**base, **fields, "seq": 12})]
        lines += [
            canonical({**json.loads(line), "seq": json.loads(line)["seq"] + 1}) for line in UNCHAINED[11:]
        ]
        report = run(lines)
        assert rules(report) == [(12, "verify.bad_field")], report.violations
        assert report.violations[0].message == problem  # word for word: a mutation run changed it


# -- also: an invalid requested value is reported as itself ----------------------------------------------


@pytest.mark.parametrize(("written", "shown"), [(b"0", "0"), (b"999", "999"), (b'"three"', "three")])
def test_an_invalid_requested_value_is_named_as_written(written: bytes, shown: str) -> None:
    """verify names the value the ledger wrote, never the 256 it checks the steps against."""
    report = run(_edit(1, b'"requested":3', b'"requested":' + written))
    messages = [v.message for v in report.violations]
    assert any(f"not {shown!r}" in m or f"not {shown}" in m for m in messages), messages
    assert any(f"after 3 of {shown} steps" in m for m in messages), messages
    assert not any("256 steps" in m or "of 256" in m for m in messages), messages


# -- item 5: a recordedAt after the moment of verification, past the stated skew ---------------------


@pytest.mark.parametrize(("ahead_s", "refused"), [(-1, False), (299, False), (301, True)])
def test_a_time_past_the_moment_of_verification_and_its_skew_is_refused(ahead_s: int, refused: bool) -> None:
    """Up to five minutes (FUTURE_SKEW_MS) ahead of the verifier's clock is skew; later is future_time."""
    from tickloop.protocol.ledger import FUTURE_SKEW_MS  # noqa: PLC0415
    from tickloop.protocol.transitions import ms  # noqa: PLC0415

    assert FUTURE_SKEW_MS == 300_000
    last = json.loads(UNCHAINED[-1])["recordedAt"]
    now = ms(last) - ahead_s * 1000
    found = [v for v in run(list(UNCHAINED), now_ms=now).violations if v.rule == "verify.future_time"]
    assert bool(found) is refused, found
    if refused:
        assert found[0].line == len(UNCHAINED)
        assert "+300 s skew" in found[0].message
