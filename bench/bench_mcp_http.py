"""The MCP face over streamable HTTP, each figure a ratio to the SDK's minimal server in the same run.

1. ``ping`` round trip (the 2025 protocol, ``mode="legacy"``: 2026-07-28 has no ping):
   ``tickloop mcp serve --transport http`` (behind its guard: token, Origin, rate limit) against
   a minimal ``MCPServer`` served by uvicorn the SDK's way. Target: at most 1.3.
   (Before TCP_NODELAY, each of ours took ~44 ms: Nagle's algorithm met the client's delayed ACK.)
2. Server CPU per ``progress`` call with 20 rows (``/proc/PID/stat`` user+sys of each server
   process over the same calls) against a minimal server returning the identical answer (read
   from ours first; checked equal, text and ``structuredContent``: until the minimal tool was
   annotated ``dict[str, Any]`` it sent no ``structuredContent``, 11 KB to our 20 KB). Target: at
   most 1.2.

Both servers run at once and the calls alternate one by one, so a busy moment hits both alike;
each line prints the median per-round ratio with its min-max.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
import msgspec
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MINIMAL = """
import json, socket, sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

PAYLOAD = json.loads(open(sys.argv[1], encoding="utf-8").read())
server = MCPServer("minimal", log_level="WARNING")


@server.tool()
def progress(limit: int = 20) -> dict[str, Any]:  # as ours: the text and structuredContent
    return PAYLOAD


config = uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning")
userver = uvicorn.Server(config)
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
sock.listen(128)  # before saying so: a client may connect at once
print(f"serving on http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
userver.run(sockets=[sock])
"""
TICK = os.sysconf("SC_CLK_TCK")


def _seed(env: dict[str, str], db: Path) -> None:
    """A profile with 20 progress rows, as 20 ticks would leave them."""
    subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "init", "--profile", "me", "--goal", "bench"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    from tickloop.operator.domain import NewProgress, Outcome  # noqa: PLC0415
    from tickloop.operator.store import open_store  # noqa: PLC0415

    start = datetime(2026, 7, 7, 9, 0, 39, tzinfo=UTC)
    detail = "observed 3 sources, staged 1 intent, gate allowed it; " * 3
    with open_store(f"sqlite://{db}") as store:
        for n in range(20):
            began = start + timedelta(minutes=n)
            row = NewProgress("fast", Outcome.DONE, began, began + timedelta(seconds=2), "sha256:" + "a" * 64)
            store.record_progress("me", msgspec.structs.replace(row, detail=detail))


@contextmanager
def _serve(argv: list[str], env: dict[str, str]) -> Iterator[tuple[int, str]]:
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "serving on" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError(f"{argv} exited: {proc.wait(timeout=10)}")
        yield proc.pid, line.split("serving on ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        proc.stderr.close()


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def _rounds(
    servers: list[tuple[int, str, dict[str, str]]], calls: int, rounds: int
) -> dict[str, tuple[list[float], list[float]]]:
    async with (
        httpx2.AsyncClient(headers=servers[0][2], timeout=30) as h0,
        httpx2.AsyncClient(headers=servers[1][2], timeout=30) as h1,
        Client(streamable_http_client(servers[0][1], http_client=h0), mode="legacy") as c0,
        Client(streamable_http_client(servers[1][1], http_client=h1), mode="legacy") as c1,
    ):
        clients = (c0, c1)
        pids = (servers[0][0], servers[1][0])
        for client in clients * 20:
            await client.send_ping()
            await client.call_tool("progress", {"limit": 20})
        out: dict[str, tuple[list[float], list[float]]] = {"ping": ([], []), "cpu": ([], [])}
        for _ in range(rounds):
            pings: tuple[list[float], list[float]] = ([], [])
            for _ in range(calls):
                for client, sample in zip(clients, pings, strict=True):
                    started = time.perf_counter()
                    await client.send_ping()
                    sample.append(time.perf_counter() - started)
            for side in (0, 1):
                out["ping"][side].append(statistics.median(pings[side]))
            before = [_cpu(p) for p in pids]
            for _ in range(calls):
                for client in clients:
                    result = await client.call_tool("progress", {"limit": 20})
                    assert not result.is_error
            for side in (0, 1):
                out["cpu"][side].append((_cpu(pids[side]) - before[side]) / calls)
    return out


def _result(url: str, headers: dict[str, str]) -> dict[str, Any]:
    """What a ``progress`` call answers, as the JSON-RPC result the client read (but ``_meta``)."""

    async def fetch() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            result = await client.call_tool("progress", {"limit": 20})
            found = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            found.pop("_meta", None)  # the server's name and version
            return found

    return anyio.run(fetch)


def _line(name: str, ours: list[float], base: list[float], target: str, unit: str) -> None:
    ratios = [a / b for a, b in zip(ours, base, strict=True)]
    spread = f"min {min(ratios):.2f} - max {max(ratios):.2f}"
    print(
        f"{name:<44} ours {statistics.median(ours) * 1e3:8.3f} {unit}  sdk minimal "
        f"{statistics.median(base) * 1e3:8.3f} {unit}  ratio {statistics.median(ratios):5.2f} ({spread})"
        f"  target {target}"
    )


def run(*, quick: bool = False) -> None:
    warnings.filterwarnings("ignore", message="ping is removed", category=Warning)
    rounds, calls = (3, 100) if quick else (7, 300)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "op.db"
        env = {**os.environ, "TICKLOOP_STORE": f"sqlite://{db}", "XDG_STATE_HOME": str(folder)}
        _seed(env, db)
        token = subprocess.run(
            [sys.executable, "-m", "tickloop", "mcp", "token"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        ours = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me", "--transport", "http"]
        ours += ["--port", "0", "--rate-limit", "1000000"]
        (folder / "minimal.py").write_text(MINIMAL, encoding="utf-8")
        auth = {"Authorization": f"Bearer {token}"}
        with _serve(ours, env) as (pid, url):
            answer = _result(url, auth)
            payload = answer["structuredContent"]
            assert len(payload["rows"]) == 20, payload
            (folder / "payload.json").write_text(json.dumps(payload), encoding="utf-8")
            base = [sys.executable, str(folder / "minimal.py"), str(folder / "payload.json")]
            with _serve(base, env) as (base_pid, base_url):
                # the same answer, text and structuredContent, or the ratio compares unlike work
                assert _result(base_url, {}) == answer, "the minimal server answers differently"
                found = anyio.run(_rounds, [(pid, url, auth), (base_pid, base_url, {})], calls, rounds)
        _line("ping round trip over HTTP", *found["ping"], "<= 1.3", "ms")
        _line("server CPU per progress call (20 rows)", *found["cpu"], "<= 1.2", "ms")
