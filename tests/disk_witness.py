"""A disk that says what it made durable: the real ``os.fsync`` wrapped, slow and jittery as on a loaded
disk, recording per file how many bytes are known durable, which threads waited, and every fsync
that found nothing new to make durable (a wasted wait)."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any


class DiskWitness:
    """Wraps the real ``os.fsync``: slow and jittery (as on a loaded disk), and it records, per
    file, how many bytes are known durable, how many fsyncs it took and which threads waited for the
    disk; ``wasted`` lists each fsync of a file (not empty) that was already wholly durable."""

    def __init__(self, real: Any, delay: tuple[float, float] = (0.002, 0.012)) -> None:
        self.real, self.delay, self.lock = real, delay, threading.Lock()
        self.durable: dict[tuple[int, int], int] = {}
        self.fsyncs: dict[tuple[int, int], int] = {}
        self.wasted: list[str] = []
        self.threads: set[str] = set()
        self.loop_thread = threading.current_thread().name

    def __call__(self, fd: int) -> None:
        st = os.fstat(fd)
        size = st.st_size  # every byte written before this call is durable once it returns
        time.sleep(random.uniform(*self.delay))
        self.real(fd)
        with self.lock:
            key = (st.st_dev, st.st_ino)
            if size > 0 and self.durable.get(key, -1) >= size:
                self.wasted.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
            self.durable[key] = max(self.durable.get(key, 0), size)
            self.fsyncs[key] = self.fsyncs.get(key, 0) + 1
            self.threads.add(threading.current_thread().name)

    def durable_bytes(self, path: Path) -> int:
        st = path.stat()
        with self.lock:
            return self.durable.get((st.st_dev, st.st_ino), 0)

    def pending(self, path: Path) -> int:
        """Bytes of ``path`` written and not yet known durable."""
        st = path.stat()
        with self.lock:
            return st.st_size - self.durable.get((st.st_dev, st.st_ino), 0)

    def fsyncs_of(self, path: Path) -> int:
        st = path.stat()
        with self.lock:
            return self.fsyncs.get((st.st_dev, st.st_ino), 0)

    def assert_durable(self, path: Path, when: str) -> None:
        pending = self.pending(path)
        assert pending <= 0, f"{when}: {path.name} has {pending} bytes not yet durable"
