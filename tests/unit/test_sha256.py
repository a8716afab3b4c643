"""tickloop's sha256 gives hashlib's digests, so every stored hash stays comparable."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from tickloop.sha256 import sha256


@given(st.binary(max_size=5000))
def test_digests_equal_hashlibs(data: bytes) -> None:
    """For any input, the digest is exactly hashlib.sha256's."""
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_one_shot_tick_path_does_not_import_hashlib() -> None:
    """The store and the observation values hash without loading hashlib (and OpenSSL)."""
    code = (
        "import sys, tickloop.operator.store.sqlite, tickloop.operator.sources.observation; "
        "import tickloop.filenames; "
        "print('HASHLIB', 'hashlib' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "HASHLIB False" in out
