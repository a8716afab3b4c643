"""Start-up of the one-shot processes (the timer-driven ticks and the monitor), kept cheap.

A one-shot tick spends most of its start-up importing: tens of thousands of module-level objects
(classes, functions, constants) that live as long as the process. The cyclic collector would walk
them again and again. ``paused_gc`` holds it off while the imports run, then freezes what they made
(``gc.freeze``: moved to the permanent generation, never scanned again) and turns it back on, so
the work the tick then does is collected as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block; then what exists is frozen and the collector
    is back as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
