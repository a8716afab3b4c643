"""stdio for the MCP face, with every unreadable message answered instead of dropped.

The SDK's stdio transport replaces invalid UTF-8 with U+FFFD and silently drops a line it cannot
parse (a lone surrogate, nesting past its parser's limit), so a client waits forever and a title
could be stored mangled. Here each line is checked first: bytes must be UTF-8, the JSON must parse,
hold only encodable text and nest at most ``MAX_DEPTH`` levels, and be one JSON-RPC 2.0 message
(an object with ``"jsonrpc": "2.0"``, a method or a result, and an id that is a string or an
integer; batches are not part of MCP). A line over ``MAX_LINE`` bytes is read to its end and
refused, as HTTP refuses a body over its cap. A line that fails gets a JSON-RPC error naming the
problem (for its ``id`` when one can be read) and never reaches a tool.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import anyio.to_thread

MAX_DEPTH = 64
#: the longest line read, in bytes (the HTTP transport's default body cap)
MAX_LINE = 2 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")')


def problem(line: bytes) -> tuple[Any, int, str] | None:
    """None for a readable message; else ``(id or None, JSON-RPC code, what is wrong)``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _id_of(line), PARSE_ERROR, f"the message is not valid UTF-8 (byte {exc.start})"
    try:
        value = json.loads(text)
    except RecursionError:
        return _id_of(line), PARSE_ERROR, f"the message nests deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return _id_of(line), PARSE_ERROR, f"the message is not valid JSON: {exc}"
    msg_id = value.get("id") if isinstance(value, dict) else None
    msg_id = msg_id if isinstance(msg_id, int | str) and not isinstance(msg_id, bool) else None
    why = _not_a_message(value) or _unencodable(value)
    return None if why is None else (msg_id, INVALID_REQUEST, why)


def _unencodable(value: Any) -> str | None:
    if _too_deep(value, 0):
        return f"the message nests deeper than {MAX_DEPTH} levels"
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "the message holds text that is not valid Unicode (a lone surrogate)"
    return None


def _not_a_message(value: Any) -> str | None:
    """What keeps ``value`` from being one JSON-RPC 2.0 message, or None."""
    if isinstance(value, list):
        return "a batch (JSON array) is not accepted: send one message per line"
    if not isinstance(value, dict):
        return f"a message must be a JSON object, not {json.dumps(value)[:40]}"
    msg_id = value.get("id")
    answer = "id" in value and ("result" in value or "error" in value)
    checks = (
        (value.get("jsonrpc") != "2.0", 'the message must say "jsonrpc": "2.0"'),
        ("id" in value and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)),
         "the id must be a string or an integer"),
        ("method" in value and not isinstance(value["method"], str), "the method must be a string"),
        ("method" not in value and not answer, "the message has no method (nor a result or error for an id)"),
    )  # fmt: skip
    return next((why for failed, why in checks if failed), None)


def _too_deep(value: Any, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return True
    if isinstance(value, dict):
        return any(_too_deep(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_too_deep(v, depth + 1) for v in value)
    return False


def _id_of(line: bytes) -> Any:
    found = _ID.search(line[:400])
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


class _Out:
    """stdout for JSON-RPC lines: one writer at a time (the SDK's and this module's answers)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.lock = anyio.Lock()

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        async with self.lock:
            await anyio.to_thread.run_sync(self._put, data)

    def _put(self, data: bytes) -> None:
        self.raw.write(data)
        self.raw.flush()

    async def flush(self) -> None:
        """Each write is flushed already."""


class _In:
    """stdin lines the SDK may parse; the others are answered on ``out`` and skipped."""

    def __init__(self, raw: IO[bytes], out: _Out) -> None:
        self.raw = raw
        self.out = out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await anyio.to_thread.run_sync(self._line):
            if not line.strip():
                continue
            found = problem(line) if len(line) <= MAX_LINE else _too_long(line)
            if found is None:
                yield line.decode("utf-8")
                continue
            msg_id, code, message = found
            answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
            await self.out.write(json.dumps(answer) + "\n")

    def _line(self) -> bytes:
        """One line of at most ``MAX_LINE`` bytes; a longer one is read to its end and kept as its
        first ``MAX_LINE + 1`` bytes (enough to know it is too long, and to find its id)."""
        line = self.raw.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := self.raw.readline(64 * 1024)) and not rest.endswith(b"\n"):
                pass
        return line


def _too_long(line: bytes) -> tuple[Any, int, str]:
    return _id_of(line), INVALID_REQUEST, f"the message is over the limit of {MAX_LINE} bytes"


def _claim_std() -> tuple[IO[bytes], IO[bytes]]:
    """Private copies of fds 0 and 1; fd 0 then reads /dev/null and fd 1 goes to stderr, so nothing
    else in the process can read the client's messages or write into the protocol stream."""
    sys.stdout.flush()
    stdin = os.fdopen(os.dup(0), "rb")
    stdout = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return stdin, stdout


async def serve(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) on this process's stdin and stdout until stdin closes."""
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    raw_in, raw_out = _claim_std()
    out = _Out(raw_out)
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async, with our streams
    async with (
        stdio_server(_In(raw_in, out), out) as (read, write),  # type: ignore[arg-type]
        anyio.create_task_group() as tasks,
    ):
        watcher = getattr(server, "watcher", None)
        if watcher is not None:
            tasks.start_soon(watcher.run)
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
        tasks.cancel_scope.cancel()
