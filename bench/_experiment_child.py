"""One measured run in a child process (so an ``LD_PRELOAD`` slow-fsync shim applies to it alone).

``python -m bench._experiment_child runner CONFIG OUT SESSIONS STEPS CONCURRENCY``: the experiment
runner against the endpoint ``scripted`` of CONFIG. ``... sdk BASE_URL REQUESTS CONCURRENCY``: the bare
``openai`` SDK streaming from the same server. Each prints ``{"seconds": ..., "cpu": ..., "requests": ...}``
(wall and this process's CPU seconds), timed around the work only: imports are excluded, and building
the HTTP client (its TLS context) is included on both sides, since the runner builds its own in the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path


def _spec(sessions: int, steps: int) -> bytes:
    return (
        f'name = "bench"\nopening = ["Wait for time steps."]\npolicies = ["default"]\n'
        f'models = ["scripted"]\nsteps = {steps}\nreplicates = {sessions}\n'
    ).encode()


def runner(config: str, out: str, sessions: int, steps: int, concurrency: int) -> dict[str, float]:
    import openai  # noqa: F401, PLC0415  (one-time imports are start-up, not throughput: as for the SDK)

    import tickloop.harness  # noqa: PLC0415
    import tickloop.models.openai_compat  # noqa: F401, PLC0415
    from tickloop.config import load_settings  # noqa: PLC0415
    from tickloop.experiment.runner import Runner  # noqa: PLC0415
    from tickloop.experiment.spec import parse_spec  # noqa: PLC0415

    settings = load_settings(env={}, path=Path(config))
    run = Runner(parse_spec(_spec(sessions, steps), where="bench"), Path(out), settings=settings, env={},
                 concurrency=concurrency)  # fmt: skip
    started, cpu = time.perf_counter(), time.process_time()
    summary = asyncio.run(run.run())
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert set(summary.statuses) == {"complete"}, summary.statuses
    return {"seconds": seconds, "cpu": cpu, "requests": summary.ran * (steps + 1)}  # + each opening turn


async def sdk_seconds(base_url: str, requests: int, concurrency: int) -> float:
    """Seconds the bare ``openai`` SDK takes to stream ``requests`` replies, ``concurrency`` at a time."""
    import openai  # noqa: PLC0415

    started = time.perf_counter()  # building the client (its TLS context) is the SDK's work, as the runner's
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    left = iter(range(requests))

    async def worker() -> None:
        for _ in left:
            stream = await client.chat.completions.create(
                model="tickloop-test", messages=[{"role": "user", "content": "tick"}], stream=True
            )
            async for _chunk in stream:
                pass

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    await client.close()
    return seconds


def sdk(base_url: str, requests: int, concurrency: int) -> dict[str, float]:
    import openai  # noqa: F401, PLC0415  (the SDK's one-time import is start-up, not throughput)

    cpu = time.process_time()
    seconds = asyncio.run(sdk_seconds(base_url, requests, concurrency))
    return {"seconds": seconds, "cpu": time.process_time() - cpu, "requests": requests}


if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    if kind == "runner":
        result = runner(args[0], args[1], int(args[2]), int(args[3]), int(args[4]))
    else:
        result = sdk(args[0], int(args[1]), int(args[2]))
    print(json.dumps(result))
