"""The experiment runner: what it adds per step, how it scales when fsync is slow, and its memory.

1. Overhead: N sessions x 8 steps on the offline model at concurrency 64, per step, as a ratio to
   ONE session's per-step cost measured in the same run (target <= 1.2). Rounds alternate the two.
2. Throughput: the scripted HTTP server answering each request after 50 ms, concurrency 64: the
   achieved steps per second as a fraction of the ideal 64 / 0.05 s (target >= 0.8).
3. Slow fsyncs: 40 sessions x 4 steps against the 50 ms server, concurrency 8 vs 1 (target >= 4x)
   and concurrency 8 vs the bare ``openai`` SDK at concurrency 8 (target >= 0.8), once with the
   disk's own fsyncs and once with every fsync slowed to 5 ms by an LD_PRELOAD shim
   (``bench/_slow_fsync.py``, compiled with gcc at run time). Each run is a child process, so the
   shim applies to it alone; the output says which fsync it measured, and its median.
4. ``--processes 2`` vs 1 against the same server: requests per second of the whole command.
5. Peak RSS of a `tickloop experiment run` process for 1,000 and 10,000 one-step sessions: flat in
   the session count because results stream to disk (ratio 10k / 1k, target ~1).

Run directories are on a real disk, never tmpfs (the output names the filesystem): fsync's cost is
part of what is measured.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._slow_fsync import build_shim, filesystem, fsync_ms, preload_env
from bench._util import peak_rss_kib
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
    """A fresh directory on a real disk: the temp dir, or the working directory if that is tmpfs."""
    base = None if filesystem(Path(tempfile.gettempdir())) != "tmpfs" else str(Path.cwd())
    made = Path(tempfile.mkdtemp(prefix="tickloop-bench-", dir=base))
    assert filesystem(made) != "tmpfs", f"{made} is on tmpfs"
    return made


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
    from bench._experiment_child import sdk_seconds  # noqa: PLC0415

    return requests / await sdk_seconds(base_url, requests, concurrency)


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
        return peak_rss_kib(child, every_s=0.05)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _spread(values: list[float]) -> str:
    mid = sorted(values)[len(values) // 2]
    return f"{mid:.2f} (min {min(values):.2f} max {max(values):.2f})"


def _child(env: dict[str, str], *args: object, cpu: list[float] | None = None) -> float:
    """Requests per second of one measured run in a child process with ``env`` (its CPU ms per
    request appended to ``cpu``: a figure the machine's load does not change much)."""
    out = subprocess.run(
        [sys.executable, "-m", "bench._experiment_child", *map(str, args)],
        env=env, capture_output=True, text=True, check=True, timeout=1800,
        cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if cpu is not None:
        cpu.append(1000 * float(result["cpu"]) / float(result["requests"]))
    return float(result["requests"]) / float(result["seconds"])


def _scripted_config(scratch: Path, base_url: str) -> Path:
    config = scratch / "config.toml"
    config.write_text(f'[model.endpoints.scripted]\nbaseUrl = "{base_url}"\nmodel = "tickloop-test"\n')
    return config


def slow_fsync(sessions: int, steps: int = 4) -> None:
    """Concurrency 8 vs 1, and vs the bare SDK, with the disk's fsyncs and with 5 ms fsyncs."""
    scratch = _scratch()
    try:
        shim = build_shim(scratch)
        with OpenAIServer(default=Reply.text("ok", chunks=1, chunk_delay=0.05)) as server:
            config = _scripted_config(scratch, server.base_url)
            for label, env in (
                ("disk's own fsync", preload_env(None)),
                ("fsync slowed to 5 ms", preload_env(shim)),
            ):
                median = fsync_ms(scratch, env)
                scale, vs_sdk, ours_cpu, sdk_cpu = [], [], [], []
                for r in range(ROUNDS):
                    runs = {
                        c: _child(env, "runner", config, scratch / f"{label[:4]}{r}-{c}", sessions, steps, c,
                                  cpu=ours_cpu if c == 8 else None)
                        for c in (1, 8)
                    }  # fmt: skip
                    bare = _child(env, "sdk", server.base_url, sessions * (steps + 1), 8, cpu=sdk_cpu)
                    scale.append(runs[8] / runs[1])
                    vs_sdk.append(runs[8] / bare)
                where = f"{label}, median {median:.2f} ms, on {filesystem(scratch)}"
                print(f"[{where}] {sessions} sessions x {steps} steps, 50 ms server: concurrency 8 vs 1: "
                      f"ratio {_spread(scale)}  target >= 4")  # fmt: skip
                print(f"[{where}] concurrency 8 vs the bare openai SDK at 8: ratio {_spread(vs_sdk)}"
                      "  target >= 0.8")  # fmt: skip
                print(f"[{where}] CPU ms per request at concurrency 8: the runner {_spread(ours_cpu)}, "
                      f"the bare SDK {_spread(sdk_cpu)}")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def processes(sessions: int, steps: int = 4, concurrency: int = 64) -> None:
    """Requests/s of `experiment run --processes 2` vs `--processes 1` (the whole command, start-up
    included) against one 50 ms server, each process at ``concurrency``."""
    scratch = _scratch()
    ratios = []
    try:
        with OpenAIServer(default=Reply.text("ok", chunks=1, chunk_delay=0.05)) as server:
            env = {**preload_env(None), "TICKLOOP_CONFIG": str(_scripted_config(scratch, server.base_url))}
            (scratch / "spec.toml").write_bytes(_spec(sessions, steps, "scripted"))
            for r in range(ROUNDS):
                rates = {}
                for count in (1, 2):
                    command = [sys.executable, "-m", "tickloop", "experiment", "run", "spec.toml",
                               "--out", f"p{r}-{count}", "--processes", str(count),
                               "--concurrency", str(concurrency)]  # fmt: skip
                    started = time.perf_counter()
                    subprocess.run(
                        command, cwd=scratch, env=env, capture_output=True, check=True, timeout=1800
                    )
                    rates[count] = sessions * (steps + 1) / (time.perf_counter() - started)
                ratios.append(rates[2] / rates[1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"--processes 2 vs 1, {sessions} sessions x {steps} steps, concurrency {concurrency} per process, "
        f"50 ms server, on {os.cpu_count()} cores: requests/s ratio {_spread(ratios)}"
    )


def run(*, quick: bool = False) -> None:
    overhead(100 if quick else 1000)
    throughput(64 if quick else 640)
    slow_fsync(16 if quick else 40)
    processes(128 if quick else 512)
    small, large = (100, 1000) if quick else (1000, 10_000)
    low = peak_rss(small)
    high = peak_rss(large)
    print(
        f"peak RSS {large} sessions {high / 1024:.1f} MiB vs {small} sessions {low / 1024:.1f} MiB: "
        f"ratio {high / low:.3f}  target ~1 (flat)"
    )
