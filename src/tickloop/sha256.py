"""``sha256``, without the cost of ``import hashlib``.

``import hashlib`` asks OpenSSL for each of the fourteen algorithms it offers, at import time: about
a twentieth of a one-shot operator tick's CPU. tickloop's hashes are all sha256, and CPython ships
its own sha256 (``_sha2`` from 3.12, ``_sha256`` before); a build without it falls back to hashlib.
The digests are the same either way (tests/unit/test_sha256.py checks them against hashlib).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    for _module in ("_sha2", "_sha256", "hashlib"):
        try:
            sha256 = importlib.import_module(_module).sha256
            break
        except (ImportError, AttributeError):
            continue

__all__ = ["sha256"]
