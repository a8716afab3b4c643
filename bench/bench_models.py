"""Streaming overhead of tickloop's OpenAI-compatible provider vs the raw ``openai`` SDK.

Both stream the same answers from the same local test server in the same run, interleaved. Reported:
median time to first token and median total time per streamed answer, as ratios to the raw SDK
(a pooled ``AsyncOpenAI``, the SDK's defaults). On loopback our provider keeps no idle connections
(nothing is left open when a caller's event loop ends); ``raw SDK, no keep-alive`` isolates that
choice, and ``tickloop, keep-alive`` is what remote endpoints get.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from bench._util import percentile, report
from tickloop.models import ChatMessage, OpenAICompatModel, TextDelta
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

MESSAGES = [ChatMessage("user", "stream me something")]

Sample = tuple[float, float]  # (time to first token, total), seconds


async def _timed(started: float, events: AsyncIterator[Any], is_text: Callable[[Any], bool]) -> Sample:
    first = 0.0
    async for event in events:
        if not first and is_text(event):
            first = time.perf_counter() - started
    return first, time.perf_counter() - started


def _raw(client: Any) -> Callable[[], Awaitable[Sample]]:
    async def once() -> Sample:
        started = time.perf_counter()  # before the request: the same span as our stream() covers
        stream = await client.chat.completions.create(
            model=MODEL_ID,
            messages=[m.to_wire() for m in MESSAGES],
            stream=True,
            stream_options={"include_usage": True},
        )
        return await _timed(started, aiter(stream), lambda c: bool(c.choices and c.choices[0].delta.content))

    return once


def _ours(model: OpenAICompatModel) -> Callable[[], Awaitable[Sample]]:
    async def once() -> Sample:
        started = time.perf_counter()
        return await _timed(started, aiter(model.stream(MESSAGES)), _is_text)

    return once


def _is_text(event: Any) -> bool:
    return isinstance(event, TextDelta) and bool(event.text)


async def _measure(base_url: str, reps: int) -> dict[str, list[Sample]]:
    import httpx2  # noqa: PLC0415
    from openai import AsyncOpenAI, DefaultAsyncHttpx2Client  # noqa: PLC0415

    no_keepalive = DefaultAsyncHttpx2Client(limits=httpx2.Limits(max_keepalive_connections=0))
    runners = {
        "raw SDK": _raw(AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)),
        "raw SDK, no keep-alive": _raw(
            AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, http_client=no_keepalive)
        ),
        "tickloop": _ours(OpenAICompatModel("bench", base_url=base_url, model=MODEL_ID, timeout_s=10)),
        "tickloop, keep-alive": _ours(
            OpenAICompatModel("bench", base_url=base_url, model=MODEL_ID, timeout_s=10, keep_alive=True)
        ),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in runners}
    for once in runners.values():  # warm-up: imports, first connections
        await once()
    for _ in range(reps):
        for name, once in runners.items():  # interleaved, so drift hits all alike
            samples[name].append(await once())
    return samples


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's signature)
    reps, chunks = (40, 50) if quick else (300, 200)
    reply = Reply.text("tok " * chunks, chunks=chunks)
    with OpenAIServer(default=reply) as server:
        samples = asyncio.run(_measure(server.base_url, reps))
    print(f"{reps} streamed answers of {chunks} chunks each, per client; medians (p90 in brackets)")
    base_first = statistics.median(s[0] for s in samples["raw SDK"]) * 1000
    base_total = statistics.median(s[1] for s in samples["raw SDK"]) * 1000
    for name in ("raw SDK, no keep-alive", "tickloop", "tickloop, keep-alive"):
        firsts = [s[0] * 1000 for s in samples[name]]
        totals = [s[1] * 1000 for s in samples[name]]
        report(
            f"{name}: time to first token", statistics.median(firsts), base_first, unit="ms", target="<= 1.2"
        )
        report(f"{name}: total stream time", statistics.median(totals), base_total, unit="ms")
        print(
            f"{'':<48} p90 first {percentile(firsts, 90):.2f} ms, p90 total {percentile(totals, 90):.2f} ms"
        )
