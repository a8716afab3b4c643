"""``loads_bounded``'s depth bound at its edge, for arrays alone and objects alone, and past the stack.

A mutation run of ``protocol/ledger.py`` found the bound pinned only by lines 1,000 levels deep, which
the parser's own RecursionError refuses as well: with the count of ``[`` or of ``{`` dropped, a line
33 levels deep in arrays alone (or objects alone) got through, and a line exactly 32 levels deep was
never read. Nor was either RecursionError path taken with its own message, nor a canonical
line one level too deep shown to the fast check (``canonical_or_none``), which must leave it to the
exact path.
"""

from __future__ import annotations

import json

import pytest
from test_verify_table import ARMED, R, build, rec

from tickloop.errors import LedgerError
from tickloop.protocol.ledger import MAX_DEPTH, canonical, canonical_or_none, decode, loads_bounded
from tickloop.protocol.verify import verify

ARRAYS = b"[" * 33 + b"]" * 33
OBJECTS = b'{"a":' * 33 + b"1" + b"}" * 33
#: 32 levels, with 33 brackets opened: the count passes the bound, the depth does not
AT_THE_BOUND = b"[" * 32 + b"]" * 31 + b",[]]"
STOPPED = [ARMED, rec(R.LOOP_STOPPED, rule="stop.user")]
PAST_THE_STACK = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("line", [ARRAYS, OBJECTS], ids=["arrays", "objects"])
def test_a_line_33_levels_deep_in_arrays_or_objects_alone_is_refused(line: bytes) -> None:
    with pytest.raises(LedgerError, match=f"^nested deeper than {MAX_DEPTH} levels$"):
        loads_bounded(line)


def test_a_line_exactly_32_levels_deep_is_read() -> None:
    assert AT_THE_BOUND.count(b"[") > MAX_DEPTH
    assert loads_bounded(AT_THE_BOUND) == json.loads(AT_THE_BOUND)


@pytest.mark.parametrize(
    "line", [PAST_THE_STACK.encode(), PAST_THE_STACK.encode("utf-16")], ids=["utf8", "utf16"]
)
def test_a_line_deeper_than_the_parser_s_stack_is_refused_by_depth_under_any_bound(line: bytes) -> None:
    """With a bound past the stack, the parser's RecursionError is still named as the nesting."""
    with pytest.raises(LedgerError, match=r"^nested deeper than 1000000 levels$"):
        loads_bounded(line, max_depth=1_000_000)


def test_a_canonical_line_33_levels_deep_is_not_taken_by_the_fast_check() -> None:
    """The fast check must refuse what the bound refuses: a canonical record one level too deep (an
    object holding 32 arrays) is left to the exact path, which names the nesting on its line."""
    deep = b'{"a":' + b"[" * 32 + b"]" * 32 + b"}"
    assert canonical_or_none(deep) is None
    lines = build(STOPPED)
    lines[1] = (2, canonical({**decode(lines[1][1]), "usage": json.loads(deep)}))
    first = verify(lines).violations[0]
    assert (first.line, first.rule, first.message) == (2, "verify.malformed", "nested deeper than 32 levels")
