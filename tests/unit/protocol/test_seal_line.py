"""The seal line ``tickloop audit seal`` prints and ``tickloop audit --seal`` reads back.

A mutation run found ``Seal.parse`` pinned by no test (the golden test parses a seal at import time):
the digest read back, the stripping and the refusal a person reads were all free to change.
"""

from __future__ import annotations

import pytest

from tickloop.errors import LedgerError
from tickloop.protocol.ledger import Seal

DIGEST = "0123456789abcdef" * 4


def test_a_printed_seal_reads_back_as_itself() -> None:
    """What ``line()`` prints, ``parse`` returns: the record count and the digest, exactly."""
    seal = Seal(12, DIGEST)
    assert seal.line() == f"tickloop-seal v1 records=12 sha256:{DIGEST}"
    assert Seal.parse(seal.line()) == seal
    assert Seal.parse(f"  {seal.line()}\n") == seal  # a file's trailing newline is fine


@pytest.mark.parametrize(
    "text",
    [
        f"tickloop-seal v1 records=0 sha256:{DIGEST}",
        f"tickloop-seal v1 records=12 sha256:{DIGEST.upper()}",
        f"tickloop-seal v2 records=12 sha256:{DIGEST}",
        f"tickloop-seal v1 records=12 sha256:{DIGEST} extra",
    ],
)
def test_anything_else_is_refused_naming_the_expected_form(text: str) -> None:
    """A person who pasted the wrong line is told what was read and what a seal line looks like."""
    with pytest.raises(LedgerError) as refused:
        Seal.parse(f" {text} ")
    assert str(refused.value) == (
        f"not a seal line: {text[:80]!r} (expected 'tickloop-seal v1 records=N sha256:<64 hex>')"
    )
