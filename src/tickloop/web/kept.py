"""Drawn HTML kept per digest of everything it was drawn from.

Every open page fetches its content again whenever any tick writes a row, so a page is mostly drawn
again from the very same rows. A ``Kept`` draws once per distinct input: the key is a digest of the
inputs' msgpack encoding (every field of every struct, which msgspec encodes in C at a fraction of
the drawing's cost), so nothing the drawing reads can change without changing the key, and no
hand-kept list of "what moves when the row changes" can fall behind the rows. msgpack keeps apart
what JSON would not (NaN and null, 1 and 1.0, true and 1); inputs it cannot encode (an integer past
64 bits in a payload) are drawn every time, not kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar, cast

import msgspec

T = TypeVar("T")


class Kept:
    """``draw(*inputs)``, kept for the ``size`` most recent distinct inputs; safe across threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._found: OrderedDict[tuple[object, bytes], object] = OrderedDict()
        self._lock = threading.Lock()
        self._encode = msgspec.msgpack.Encoder().encode

    def __call__(self, draw: Callable[..., T], *inputs: object) -> T:
        try:
            key = (draw, hashlib.blake2b(self._encode(inputs), digest_size=16).digest())
        except (TypeError, OverflowError):
            return draw(*inputs)
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
                return cast("T", found)  # kept under its own draw's key
        drawn = draw(*inputs)
        with self._lock:
            self._found[key] = drawn
            while len(self._found) > self.size:
                self._found.popitem(last=False)
        return drawn
