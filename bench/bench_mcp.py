"""The MCP face's figures, each as a ratio to the SDK's minimal server measured in the same run.

1. A tool call round trip over stdio: ``progress`` on ``tickloop mcp serve`` (a real SQLite store)
   against a no-op tool on a minimal ``MCPServer``. Target: at most 1.5.
2. Start-up to the first answered ``initialize``: ``tickloop mcp serve`` against the minimal server
   started the same way (``python FILE``). Target: at most 1.3.

Both alternate the two servers round by round and print the median ratio with its min-max.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

MINIMAL = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal", log_level="WARNING")


@server.tool()
def noop() -> dict:
    return {"rows": []}


server.run("stdio")
"""
INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "0"},
            },
        }
    )
    + "\n"
).encode()


def _commands(folder: Path) -> tuple[list[str], list[str], dict[str, str]]:
    env = {**os.environ, "TICKLOOP_STORE": f"sqlite://{folder / 'op.db'}", "XDG_STATE_HOME": str(folder)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tickloop",
            "operator",
            "init",
            "--profile",
            "me",
            "--goal",
            "bench",
            "--task",
            "t",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    minimal = folder / "minimal.py"
    minimal.write_text(MINIMAL, encoding="utf-8")
    ours = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"]
    return ours, [sys.executable, str(minimal)], env


def _startup(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    assert b'"result"' in line, line
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()
    return elapsed


async def _round_trips(
    argv: list[str], env: dict[str, str], tool: str, calls: int, rounds: int
) -> list[float]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    medians = []
    async with Client(params) as client:
        for _ in range(20):
            await client.call_tool(tool, {})
        for _ in range(rounds):
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool(tool, {})
                samples.append(time.perf_counter() - started)
                assert not result.is_error
            medians.append(statistics.median(samples))
    return medians


def _line(name: str, ours: list[float], base: list[float], target: str) -> None:
    ratios = [a / b for a, b in zip(ours, base, strict=True)]
    ms_ours, ms_base = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
    spread = f"min {min(ratios):.2f} - max {max(ratios):.2f}"
    print(
        f"{name:<44} ours {ms_ours:8.2f} ms  sdk minimal {ms_base:8.2f} ms"
        f"  ratio {statistics.median(ratios):5.2f} ({spread})  target {target}"
    )


def run(*, quick: bool = False) -> None:
    rounds, calls = (3, 50) if quick else (7, 200)
    with tempfile.TemporaryDirectory() as tmp:
        ours, minimal, env = _commands(Path(tmp))
        trips_ours: list[float] = []
        trips_base: list[float] = []
        for _ in range(rounds):  # alternate whole sessions so drift in the machine hits both
            trips_ours += anyio.run(_round_trips, ours, env, "progress", calls, 1)
            trips_base += anyio.run(_round_trips, minimal, env, "noop", calls, 1)
        _line("tool round trip over stdio (progress vs no-op)", trips_ours, trips_base, "<= 1.5")
        start_ours: list[float] = []
        start_base: list[float] = []
        for _ in range(rounds + 2):
            start_ours.append(_startup(ours, env))
            start_base.append(_startup(minimal, env))
        _line("start-up to first answered initialize", start_ours, start_base, "<= 1.3")
