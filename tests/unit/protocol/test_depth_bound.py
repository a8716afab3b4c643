"""Every reader's depth bound: a deeply nested line is a clear error, never a RecursionError."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.audit import read_ledger, verify_file
from tickloop.errors import LedgerError
from tickloop.harness.jsonl import SessionError, read_records
from tickloop.protocol.ledger import MAX_DEPTH, decode, loads_bounded, nesting_depth

GOLDEN = Path(__file__).parents[2] / "golden" / "ledgers"
DEEP = b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}"  #: about 2 KB, 1,001 levels


def test_a_deep_line_is_refused_before_the_parser_recurses() -> None:
    """decode() names the nesting as the problem instead of letting the stack overflow."""
    with pytest.raises(LedgerError, match=f"nested deeper than {MAX_DEPTH} levels"):
        decode(DEEP)


def test_a_deep_record_is_a_malformed_violation_with_its_line(tmp_path: Path) -> None:
    """As line 18 of a valid ledger, a 1,000-deep record is verify.malformed on line 18."""
    path = tmp_path / "deep.jsonl"
    path.write_bytes((GOLDEN / "valid_unchained.jsonl").read_bytes() + DEEP + b"\n")
    report, _ = verify_file(path)
    assert [(v.line, v.rule) for v in report.violations] == [(18, "verify.malformed")]


def test_read_ledger_names_the_file_and_the_line(tmp_path: Path) -> None:
    """The chat's reader of its own ledger refuses it naming the file and the line."""
    path = tmp_path / "deep.jsonl"
    path.write_bytes((GOLDEN / "valid_unchained.jsonl").read_bytes() + DEEP + b"\n")
    with pytest.raises(LedgerError, match=f"^{path}: line 18: nested deeper"):
        read_ledger(path).records()


def test_the_transcript_reader_has_the_same_bound(tmp_path: Path) -> None:
    """A session transcript with a deep line is a SessionError naming the file and line."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"type":"session","id":"s","version":1}\n' + DEEP + b"\n")
    with pytest.raises(SessionError, match="line 2: nested deeper"):
        read_records(path)


def test_brackets_inside_strings_do_not_count() -> None:
    """Text full of brackets (a tool result, a reply quoting JSON) is no nesting at all."""
    line = json.dumps({"text": "[[[[{{{{" * 100 + '\\"]]]' * 50}).encode()
    assert nesting_depth(line) == 1
    assert loads_bounded(line)["text"].startswith("[[[[")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=40,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(_json)
def test_nesting_depth_matches_the_structure(value: object) -> None:
    """The bracket scan agrees with the parsed structure's depth for any JSON value."""
    assert nesting_depth(json.dumps(value).encode()) == _depth(value)


@given(st.binary(max_size=300) | st.text(alphabet='[]{}"\\:,1 ', max_size=3000).map(str.encode))
def test_any_bytes_decode_or_fail_with_ledger_error(line: bytes) -> None:
    """Hostile bytes give a record or a LedgerError, never another exception."""
    with contextlib.suppress(LedgerError):
        loads_bounded(line)
