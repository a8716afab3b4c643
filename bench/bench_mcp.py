"""The MCP face's figures, each as a ratio to the SDK's minimal server measured in the same run.

1. A tool call round trip over stdio: ``progress`` on ``tickloop mcp serve`` (a real SQLite store)
   against a no-op tool on a minimal ``MCPServer``. Target: at most 1.5.
2. Start-up to the first answered ``initialize``: ``tickloop mcp serve`` against the minimal server
   started the same way (``python FILE``). Target: at most 1.3.

The round trips interleave the two servers call by call (both sessions open at once); the start-ups
alternate process by process, and also report each process's CPU time, which a busy machine
disturbs less than the wall clock. Each line prints the median per-round ratio with its min-max.
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
        timeout=900,
    )
    minimal = folder / "minimal.py"
    minimal.write_text(MINIMAL, encoding="utf-8")
    ours = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"]
    return ours, [sys.executable, str(minimal)], env


def _startup(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time to the first answered ``initialize``, and the process's whole CPU time (user+sys),
    which a busy machine disturbs less than the wall clock."""
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
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    return elapsed, usage.ru_utime + usage.ru_stime


async def _round_trips(
    ours: list[str], base: list[str], env: dict[str, str], calls: int, rounds: int
) -> tuple[list[float], list[float]]:
    """Both servers open at once, calls interleaved one by one, so a busy moment hits both alike;
    per round, the median call time of each."""
    async with (
        Client(StdioServerParameters(command=ours[0], args=ours[1:], env=env)) as a,
        Client(StdioServerParameters(command=base[0], args=base[1:], env=env)) as b,
    ):
        pairs = ((a, "progress"), (b, "noop"))
        for client, tool in pairs * 20:
            await client.call_tool(tool, {})
        medians: tuple[list[float], list[float]] = ([], [])
        for _ in range(rounds):
            samples: tuple[list[float], list[float]] = ([], [])
            for _ in range(calls):
                for (client, tool), out in zip(pairs, samples, strict=True):
                    started = time.perf_counter()
                    result = await client.call_tool(tool, {})
                    out.append(time.perf_counter() - started)
                    assert not result.is_error
            for sample, median in zip(samples, medians, strict=True):
                median.append(statistics.median(sample))
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
        trips_ours, trips_base = anyio.run(_round_trips, ours, minimal, env, calls, rounds)
        _line("tool round trip over stdio (progress vs no-op)", trips_ours, trips_base, "<= 1.5")
        start_ours: list[tuple[float, float]] = []
        start_base: list[tuple[float, float]] = []
        for _ in range(rounds + 2):
            start_ours.append(_startup(ours, env))
            start_base.append(_startup(minimal, env))
        wall = ([w for w, _ in start_ours], [w for w, _ in start_base])
        cpu = ([c for _, c in start_ours], [c for _, c in start_base])
        _line("start-up to first answered initialize", *wall, "<= 1.3")
        _line("  the same processes' CPU time (user+sys)", *cpu, "(context)")
