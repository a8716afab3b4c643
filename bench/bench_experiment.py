"""The experiment runner: what it adds per step, how close it gets to an ideal server, and its memory.

1. Overhead: N sessions x 8 steps on the offline model at concurrency 64, per step, as a ratio to
   ONE session's per-step cost measured in the same run (target <= 1.2). Rounds alternate the two.
2. Throughput: the scripted HTTP server answering each request after 50 ms, concurrency 64: the
   achieved steps per second as a fraction of the ideal 64 / 0.05 s (target >= 0.8).
3. Peak RSS of a `tickloop experiment run` process for 1,000 and 10,000 one-step sessions: flat in
   the session count because results stream to disk (ratio 10k / 1k, target ~1).

Run directories live in /dev/shm when it exists: the figures are about the runner, not the disk
(every transcript and ledger record is still fsynced as in production).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tickloop.config import load_settings
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec
from tickloop.testing.openai_server import OpenAIServer, Reply

ROUNDS = 3


def _spec(sessions: int, steps: int, model: str = "offline") -> bytes:
    return (
        f'name = "bench"\nopening = ["Wait for time steps."]\npolicies = ["default"]\n'
        f'models = ["{model}"]\nsteps = {steps}\nreplicates = {sessions}\n'
    ).encode()


def _scratch() -> Path:
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    return Path(tempfile.mkdtemp(prefix="tickloop-bench-", dir=base))


def _run(spec: bytes, *, concurrency: int, config: Path | None = None) -> tuple[float, int]:
    """Wall seconds and steps of one run into a fresh directory."""
    out = _scratch()
    try:
        settings = load_settings(env={}, path=config)
        runner = Runner(
            parse_spec(spec, where="bench"), out / "run", settings=settings, env={}, concurrency=concurrency
        )
        started = time.perf_counter()
        summary = asyncio.run(runner.run())
        elapsed = time.perf_counter() - started
        assert set(summary.statuses) == {"complete"}, summary.statuses
        steps = summary.ran * int(spec.split(b"steps = ")[1].split(b"\n")[0])
        return elapsed, steps
    finally:
        shutil.rmtree(out, ignore_errors=True)


def overhead(sessions: int) -> None:
    ratios = []
    for _ in range(ROUNDS):
        one_s, one_steps = _run(_spec(1, 8), concurrency=1)
        many_s, many_steps = _run(_spec(sessions, 8), concurrency=64)
        ratios.append((many_s / many_steps) / (one_s / one_steps))
    print(
        f"overhead per step, {sessions} sessions x 8 steps at concurrency 64 vs one session: "
        f"ratio {sorted(ratios)[len(ratios) // 2]:.3f} (min {min(ratios):.3f} max {max(ratios):.3f})"
        "  target <= 1.2"
    )


async def _bare_sdk(base_url: str, requests: int, concurrency: int) -> float:
    """Requests per second of the bare ``openai`` SDK streaming from the same server, ``concurrency``
    at a time: the ceiling one Python process reaches before any harness work."""
    import openai  # noqa: PLC0415

    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    left = iter(range(requests))

    async def worker() -> None:
        for _ in left:
            stream = await client.chat.completions.create(
                model="tickloop-test", messages=[{"role": "user", "content": "tick"}], stream=True
            )
            async for _chunk in stream:
                pass

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await client.close()
    return requests / elapsed


def throughput(sessions: int) -> None:
    import openai  # noqa: F401, PLC0415  (the SDK's one-time import is start-up, not throughput)

    ideal = 64 / 0.05
    fractions, against_sdk, sdk_fractions = [], [], []
    with OpenAIServer(default=Reply.text("ok", chunks=1, chunk_delay=0.05)) as server:
        config = _scratch() / "config.toml"
        config.write_text(
            f'[model.endpoints.scripted]\nbaseUrl = "{server.base_url}"\nmodel = "tickloop-test"\n'
        )
        for _ in range(ROUNDS):
            wall, steps = _run(_spec(sessions, 4, "scripted"), concurrency=64, config=config)
            # Each session also makes one opening request: count every request the server answered.
            ours = (steps + sessions) / wall
            sdk = asyncio.run(_bare_sdk(server.base_url, steps + sessions, 64))
            fractions.append(ours / ideal)
            sdk_fractions.append(sdk / ideal)
            against_sdk.append(ours / sdk)
        shutil.rmtree(config.parent, ignore_errors=True)
    for label, values, target in (
        (
            f"requests/s vs ideal 64/0.05s with a 50 ms server, {sessions} sessions: fraction",
            fractions,
            ">= 0.8",
        ),
        ("bare openai SDK, same requests and concurrency, vs the same ideal: fraction", sdk_fractions, ""),
        ("the runner's requests/s vs the bare SDK's (the process's ceiling): ratio", against_sdk, ""),
    ):
        mid = sorted(values)[len(values) // 2]
        print(
            f"{label} {mid:.3f} (min {min(values):.3f} max {max(values):.3f})"
            + (f"  target {target}" if target else "")
        )


def peak_rss(sessions: int) -> int:
    """KiB of peak RSS of a `tickloop experiment run` child process.

    Read from the child's own ``VmHWM`` while it runs: ``ru_maxrss`` would report this (large)
    process's size, which a forked child inherits before it execs the new program."""
    scratch = _scratch()
    try:
        (scratch / "spec.toml").write_bytes(_spec(sessions, 1))
        (scratch / "config.toml").write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
        env["TICKLOOP_CONFIG"] = str(scratch / "config.toml")
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tickloop",
                "experiment",
                "run",
                "spec.toml",
                "--out",
                "run",
                "--concurrency",
                "64",
            ],
            cwd=scratch,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        peak, status = 0, Path(f"/proc/{child.pid}/status")
        while child.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
            except (OSError, ValueError, IndexError):
                pass  # it exited between poll() and the read
            time.sleep(0.05)
        assert child.returncode == 0, child.returncode
        return peak
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(*, quick: bool = False) -> None:
    overhead(100 if quick else 1000)
    throughput(64 if quick else 640)
    small, large = (100, 1000) if quick else (1000, 10_000)
    low = peak_rss(small)
    high = peak_rss(large)
    print(
        f"peak RSS {large} sessions {high / 1024:.1f} MiB vs {small} sessions {low / 1024:.1f} MiB: "
        f"ratio {high / low:.3f}  target ~1 (flat)"
    )
