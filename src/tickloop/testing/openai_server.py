"""A real OpenAI-compatible HTTP server for tests: 127.0.0.1, an ephemeral port, scripted replies.

It speaks the chat-completions wire format (JSON and SSE with a final usage chunk and
``data: [DONE]``) over real sockets, so a test exercises the same client path as production. Each
``POST /v1/chat/completions`` takes the next scripted ``Reply`` (or the default one), and every
request body is recorded, so a test can assert exactly what reached the model::

    with OpenAIServer(default=Reply.text("hi there", chunks=2)) as server:
        server.script(Reply.error(429), Reply.disconnect(after=1))
        ...  # point a client at server.base_url
        assert server.bodies()[0]["messages"][-1]["content"] == "hello"

As a process (for subprocess tests)::

    python -m tickloop.testing.openai_server --port 0 --reply TEXT [--chunk-delay S] [--record FILE]

prints its base URL on the first line of stdout and stops cleanly on SIGTERM or SIGINT.

Standard library only: importing it never imports a model SDK.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import select
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from tickloop.testing import openai_wire as wire
from tickloop.testing.openai_faults import Reply
from tickloop.testing.openai_wire import MODEL_ID  # noqa: F401  (re-exported: tests import it from here)

__all__ = ["OpenAIServer", "RecordedRequest", "Reply", "main"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What the server received: method, path, headers (lower-case names), the JSON body, and the
    client's port (equal ports: one reused connection)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    client_port: int = 0


@dataclass
class _State:
    default: Reply
    queue: collections.deque[Reply] = field(default_factory=collections.deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    record_path: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    client_closed: threading.Event = field(default_factory=threading.Event)
    client_closed_count: int = 0
    #: tokens a ``Reply.generating`` model generated while its client was already gone
    tokens_after_client_left: int = 0
    #: connections accepted and not yet ended (a kept-alive connection stays open between requests)
    open_connections: int = 0
    #: what ``GET /props`` answers, as llama.cpp's llama-server does (None: 404, as other servers)
    props: dict[str, Any] | None = None
    connections_changed: threading.Condition = field(default_factory=threading.Condition)

    def next_reply(self) -> Reply:
        with self.lock:
            return self.queue.popleft() if self.queue else self.default

    def record(self, request: RecordedRequest) -> None:
        with self.lock:
            self.requests.append(request)
            if self.record_path is not None and request.body is not None:
                with self.record_path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(request.body, sort_keys=True) + "\n")

    def note_connection(self, delta: int) -> None:
        with self.connections_changed:
            self.open_connections += delta
            self.connections_changed.notify_all()

    def note_token_for_nobody(self) -> None:
        with self.lock:
            self.tokens_after_client_left += 1

    def note_client_closed(self) -> None:
        with self.lock:
            self.client_closed_count += 1
        self.client_closed.set()


class _ClientGoneError(Exception):
    """The client closed the connection while we were writing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked SSE, as real servers do
    # TCP_NODELAY, as uvicorn and llama.cpp set it: without it Nagle's algorithm and delayed ACKs
    # hold small SSE writes on a reused connection for ~40 ms and distort every latency measurement.
    disable_nagle_algorithm = True
    server: _Server

    def handle(self) -> None:
        # The client going away between requests is what the fault scripts provoke: not an error.
        self.server.state.note_connection(+1)
        try:
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()
        finally:
            self.server.state.note_connection(-1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (stdlib signature)
        """Quiet: tests assert on recorded requests, not on stderr."""

    def do_GET(self) -> None:
        self._record(None)
        props = self.server.state.props
        if self.path.rstrip("/") == "/props" and props is not None:
            self._json(200, props)
            return
        if self.path.rstrip("/") != "/v1/models":
            self._json(404, wire.error_body(404, f"no route {self.path}"))
            return
        self._json(200, {"object": "list", "data": [wire.model_entry()]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._record(None)
            self._json(400, wire.error_body(400, "request body is not JSON"))
            return
        self._record(body if isinstance(body, dict) else None)
        if self.path != "/v1/chat/completions" or not isinstance(body, dict):
            self._json(404, wire.error_body(404, f"no route {self.path}"))
            return
        reply = self.server.state.next_reply()
        if reply.status != 200:
            error = wire.error_body(reply.status, reply.error_message)
            error["error"].update(dict(reply.error_fields))
            self._json(reply.status, error)
        elif body.get("stream"):
            self._stream(reply, body)
        else:
            self._whole(reply, body)

    def _whole(self, reply: Reply, body: dict[str, Any]) -> None:
        """A non-streamed answer; a stall delays it, ``raw_chunk`` replaces it verbatim."""
        if reply.stall_after is not None and self.server.state.stop.wait(reply.stall_seconds):
            return
        if reply.generate:  # every token is generated before anything is sent, client or not
            for _ in range(reply.chunks):
                if self.server.state.stop.wait(reply.chunk_delay):
                    return
                if self._client_gone():
                    self.server.state.note_token_for_nobody()
        if reply.raw_chunk is None:
            self._json(200, wire.completion(reply, body))
            return
        data = reply.raw_chunk.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body: dict[str, Any] | None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        port = int(self.client_address[1])
        self.server.state.record(RecordedRequest(self.command, self.path, headers, body, port))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._stream_body(reply, body)
        except _ClientGoneError:
            self.close_connection = True
            self.server.state.note_client_closed()

    def _stream_body(self, reply: Reply, body: dict[str, Any]) -> None:
        text = reply.answer(body)
        pieces = reply.pieces(text)
        state = self.server.state
        self._event({**wire.chunk_head(), "choices": [wire.choice({"role": "assistant", "content": ""})]})
        if reply.raw_chunk is not None:
            self._write_chunk(b"data: " + reply.raw_chunk.encode() + b"\n\n")
        for i, piece in enumerate(pieces):
            if self._interrupt(reply, i):
                return
            if reply.chunk_delay and state.stop.wait(reply.chunk_delay):
                return
            if reply.generate and self._client_gone():  # generated, then found nobody to send it to
                state.note_token_for_nobody()
                raise _ClientGoneError
            self._event({**wire.chunk_head(), "choices": [wire.choice({"content": piece})]})
        if self._interrupt(reply, len(pieces)):
            return
        for index, (call_id, name, arguments) in enumerate(reply.calls):
            function = {"name": name, "arguments": ""}
            first = {"index": index, "id": call_id, "type": "function", "function": function}
            self._event({**wire.chunk_head(), "choices": [wire.choice({"tool_calls": [first]})]})
            for piece in reply.pieces(arguments):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                self._event({**wire.chunk_head(), "choices": [wire.choice(delta)]})
        self._event({**wire.chunk_head(), "choices": [wire.choice({}, reply.finish_reason)]})
        if reply.report_usage and (body.get("stream_options") or {}).get("include_usage"):
            self._event({**wire.chunk_head(), "choices": [], "usage": wire.usage(reply, body, text)})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _client_gone(self) -> bool:
        """The client closed its side: the socket reads as ended (or failed), without blocking."""
        try:
            ready, _, _ = select.select([self.connection], [], [], 0)
            return bool(ready) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    def _interrupt(self, reply: Reply, sent: int) -> bool:
        """Apply a scripted fault once ``sent`` content chunks went out; True ends the response."""
        if reply.malformed_after == sent:
            self.close_connection = True  # the client abandons the stream; don't wait on it
            self._write_chunk(b"data: {not json\n\n")
            self._write_chunk(b"")
            return True
        if reply.truncate_after == sent:
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
            return True
        if reply.disconnect_after == sent:
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if reply.stall_after == sent:  # silent, but watching for the client to give up
            deadline = time.monotonic() + reply.stall_seconds
            while not self.server.state.stop.wait(0.01) and time.monotonic() < deadline:
                if self._client_gone():
                    self.server.state.note_client_closed()
                    break
            self.close_connection = True
            return True
        return False

    def _event(self, payload: dict[str, Any]) -> None:
        self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as exc:  # BrokenPipe, ConnectionReset: the client went away
            raise _ClientGoneError from exc


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    #: socketserver's default backlog is 5: 64 clients connecting at once got connection resets
    request_queue_size = 256
    state: _State


class OpenAIServer:
    """The server as a context manager: started on enter (127.0.0.1, ``port`` 0 = ephemeral)."""

    def __init__(
        self, *, default: Reply | None = None, port: int = 0, record_path: Path | None = None
    ) -> None:
        self._state = _State(default=default or Reply(), record_path=record_path)
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        httpd = _Server(("127.0.0.1", self._port), _Handler)
        httpd.state = self._state
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.02,), name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; stalled or delayed responses are released at once."""
        self._state.stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- what tests use ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running: use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what an OpenAI client takes as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def default(self) -> Reply:
        return self._state.default

    @default.setter
    def default(self, reply: Reply) -> None:
        self._state.default = reply

    def act_as_llama_cpp(self, chat_template: str = "{{ messages }}") -> None:
        """Answer ``GET /props`` as llama.cpp's llama-server does (its template, its context size),
        so a client can tell it is talking to llama.cpp."""
        self._state.props = {
            "chat_template": chat_template,
            "default_generation_settings": {"n_ctx": 4096},
            "build_info": "tickloop-test",
        }

    def script(self, *replies: Reply) -> None:
        """Queue behaviours for the next chat-completions requests, in order."""
        with self._state.lock:
            self._state.queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completions requests, in order."""
        return [r.body for r in self.requests if r.path == "/v1/chat/completions" and r.body is not None]

    @property
    def client_closed_count(self) -> int:
        """How many streams the client closed before the server finished writing them."""
        return self._state.client_closed_count

    @property
    def tokens_after_client_left(self) -> int:
        """Tokens a ``Reply.generating`` model generated after its client had closed the connection."""
        return self._state.tokens_after_client_left

    @property
    def open_connections(self) -> int:
        """Connections accepted and not ended yet (kept-alive ones stay open between requests)."""
        return self._state.open_connections

    def wait_connections_closed(self, timeout: float) -> bool:
        """Wait until no client connection is open (the client closed its pool); True if so."""
        state = self._state
        with state.connections_changed:
            return state.connections_changed.wait_for(lambda: state.open_connections == 0, timeout)

    def wait_client_closed(self, timeout: float) -> bool:
        """Wait until a client closes a stream early (writing the next chunk fails); True if it did."""
        return self._state.client_closed.wait(timeout)


# -- as a process ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tickloop.testing.openai_server", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--reply", default=Reply().content, help="the assistant text of every answer")
    parser.add_argument("--echo", action="store_true", help="answer 'echo: <last user message>'")
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds before each chunk")
    parser.add_argument("--record", type=Path, help="append each request body as a JSON line")
    args = parser.parse_args(argv)
    reply = replace(Reply.text(args.reply, chunks=args.chunks, chunk_delay=args.chunk_delay), echo=args.echo)
    stopped = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001  (signal API)
        stopped.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with OpenAIServer(default=reply, port=args.port, record_path=args.record) as server:
        print(server.base_url, flush=True)  # noqa: T201  (the process mode's one output: its URL)
        while not stopped.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
