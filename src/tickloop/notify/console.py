"""The embedded default channels: a stream (stdout) and an append-only file readable only by its owner."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO

from tickloop.clock import Clock, SystemClock, utc_iso
from tickloop.inert import inert
from tickloop.notify.base import DeliveryResult, one_line

#: owner read/write only: notifications may quote goals, mail subjects and amounts.
FILE_MODE = 0o600
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class ConsoleChannel:
    """Writes ``[time] subject`` and the indented body to a text stream (stdout by default)."""

    def __init__(
        self, name: str = "console", *, stream: TextIO | None = None, clock: Clock | None = None
    ) -> None:
        self._name = name
        self._stream = stream
        self._clock = clock or SystemClock()

    @property
    def name(self) -> str:
        return self._name

    def describe(self) -> str:
        return "console:stdout" if self._stream is None else "console:stream"

    def send(self, subject: str, body: str) -> DeliveryResult:
        stream = self._stream or sys.stdout
        # Subjects and bodies quote mail subjects, titles and model output: inert on a terminal.
        lines = [f"[{utc_iso(self._clock.now())}] {inert(one_line(subject), keep_newlines=False)}"]
        lines += [f"    {inert(line)}" for line in body.splitlines()]
        try:
            stream.write("\n".join(lines) + "\n")
            stream.flush()
        except (OSError, ValueError) as exc:  # ValueError: the stream was closed
            return DeliveryResult(
                self._name, ok=False, reason=one_line(f"cannot write to the console: {exc}")
            )
        return DeliveryResult(self._name, ok=True, detail=self.describe())


class FileChannel:
    """Appends one JSON line per notification to a file created with mode 0600 (tightened if looser)."""

    def __init__(self, name: str = "file", *, path: Path, clock: Clock | None = None) -> None:
        self._name = name
        self._path = path.expanduser()
        self._clock = clock or SystemClock()

    @property
    def name(self) -> str:
        return self._name

    def describe(self) -> str:
        return f"file:{self._path}"

    def send(self, subject: str, body: str) -> DeliveryResult:
        record = {"at": utc_iso(self._clock.now()), "channel": self._name, "subject": subject, "body": body}
        line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        try:
            self._append(line)
        except OSError as exc:
            return DeliveryResult(
                self._name, ok=False, reason=one_line(f"cannot append to {self._path}: {exc.strerror or exc}")
            )
        return DeliveryResult(self._name, ok=True, detail=str(self._path))

    def _append(self, data: bytes) -> None:
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink planted at the log path must not redirect notifications elsewhere.
        fd = os.open(self._path, _OPEN_FLAGS, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
