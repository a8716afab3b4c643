"""verify's fast canonical check (one msgspec decode and encode) decides exactly what the rule says:
a line is accepted iff it is strict UTF-8 and byte-equal to ``canonical`` of what it decodes to."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from tickloop.protocol.ledger import canonical, canonical_or_none

_FAST = msgspec.json.Encoder(order="sorted")


def _exactly_canonical(line: bytes) -> bool:
    """The rule itself, by the slow path: decode with ``json``, re-encode with ``canonical``."""
    try:
        return canonical(json.loads(line)) == line
    except (ValueError, UnicodeError, RecursionError):
        return False


def test_both_encoders_escape_every_code_point_alike() -> None:
    """The reason the fast check is exact: every code point outside the surrogates is written the
    same way by msgspec and by ``canonical`` (control characters, quotes, backslashes, U+2028, ...)."""
    points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    for start in range(0, len(points), 2048):
        chunk = points[start : start + 2048]
        values = {f"k{cp:06x}": chr(cp) for cp in chunk}
        assert _FAST.encode(values) == canonical(values), hex(chunk[0])


def test_keys_sort_by_code_point_in_both() -> None:
    """Keys from several planes (UTF-16 order would put U+10000 before U+FFFF) sort alike."""
    rec = {"\uffff": 1, "\U00010000": 2, "a": 3, "B": 4, "\u00e9": 5, "": 6}
    assert _FAST.encode(rec) == canonical(rec)


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec="utf-8") | st.characters(categories=["Cs"]))
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(value=_values)
def test_the_fast_check_agrees_with_the_rule_on_any_value(value: object) -> None:
    """Whatever the value (floats, huge ints, lone surrogates, any text), written canonically, with
    ASCII escapes, or pretty-printed: accepted by the fast check only when the rule accepts it."""
    rec = {"token": value}
    lines = [
        json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        ),
        json.dumps(rec, sort_keys=True, separators=(",", ":")).encode(),
        json.dumps(rec, sort_keys=True).encode(),
    ]
    for line in lines:
        fast = canonical_or_none(line)
        if fast is not None:
            assert _exactly_canonical(line), line
            assert fast == json.loads(line)


@given(line=st.binary(max_size=40) | st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_the_fast_check_never_accepts_what_the_rule_refuses(line: bytes) -> None:
    """Arbitrary bytes: whatever the fast check accepts is canonical by the rule."""
    if canonical_or_none(line) is not None:
        assert _exactly_canonical(line)


def test_a_float_and_a_deep_line_take_the_exact_path() -> None:
    """A float (the two encoders may print one differently) and a line nested past the depth bound are
    never accepted by the fast check; the exact path decides them."""
    assert canonical_or_none(b'{"a":1.5}') is None
    assert _exactly_canonical(b'{"a":1.5}')
    assert canonical_or_none(b'{"a":' + b"[" * 40 + b"]" * 40 + b"}") is None
    assert canonical_or_none(b'{"a":1,"b":[2,{"c":"\\n"}]}') == {"a": 1, "b": [2, {"c": "\n"}]}
