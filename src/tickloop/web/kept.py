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
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import msgspec

T = TypeVar("T")


class Lru(Generic[T]):
    """The ``size`` values most recently used, the least recently used out first; safe across the
    worker threads that draw pages. ``make`` runs outside the lock: two threads that miss the same
    key both draw it, and the later one's value is kept (the same value, drawn from the same key)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._found: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
                return found
        made = make()
        with self._lock:
            self._found[key] = made
            while len(self._found) > self.size:
                self._found.popitem(last=False)
        return made


class Kept(Generic[T]):
    """``draw(*inputs)``, kept for the ``size`` most recent distinct inputs; safe across threads."""

    def __init__(self, draw: Callable[..., T], size: int) -> None:
        self.draw = draw
        self._kept: Lru[T] = Lru(size)
        self._encode = msgspec.msgpack.Encoder().encode

    def __call__(self, *inputs: object) -> T:
        try:
            key = hashlib.blake2b(self._encode(inputs), digest_size=16).digest()
        except (TypeError, OverflowError):
            return self.draw(*inputs)
        return self._kept.get(key, lambda: self.draw(*inputs))
