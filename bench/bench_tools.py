"""Tool calling overhead: one tool round through the harness vs the bare ``openai`` SDK, and one MCP
call through the harness's toolbox vs the SDK's ``ClientSession`` on the same server.

1. **One tool round** (model -> call -> result -> model) against the scripted server: the harness's
   ``Agent`` (a turn: stream, assemble the call, record it, run the tool, record the result, stream
   again, end the turn) vs the ``openai`` SDK doing the same two streamed requests, assembling the
   call's arguments from the chunks and running the same tool in between. Each exchange starts a
   fresh conversation on both sides (a long history would measure the SDK's request transform).
2. **One MCP call**: ``Toolbox.run`` (name lookup, JSON arguments, the SDK call, cap, sha256) vs
   ``ClientSession.call_tool`` on a second connection to the same server program.

Each round times the two sides interleaved and takes their medians; printed are the median ratio
over rounds with its min-max.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from tickloop.harness import Agent, memory_session
from tickloop.harness.tools import FunctionTool, Toolbox, ToolSet, open_toolbox, tools_settings
from tickloop.models import OpenAICompatModel
from tickloop.models.base import ToolCall, ToolSpec
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

ARGS = json.dumps({"text": "the quick brown fox jumps over the lazy dog " * 4})
SPEC = ToolSpec("echo", "Return the text.", {"type": "object", "properties": {"text": {"type": "string"}}})
MCP_SERVER = Path(__file__).with_name("_mcp_echo_server.py")


async def echo(args: Mapping[str, Any]) -> str:
    return str(args.get("text", ""))


def replies() -> tuple[Reply, Reply]:
    return Reply.tool_calls(("call-1", "echo", ARGS), chunks=8), Reply.text("done, thanks", chunks=3)


async def _harness_side(server: OpenAIServer) -> Callable[[], Awaitable[float]]:
    model = OpenAICompatModel("bench", base_url=server.base_url, model=MODEL_ID, timeout_s=10)
    agent = Agent(model, memory_session(), toolbox=Toolbox([ToolSet("b", [FunctionTool(SPEC, echo)])]))
    await agent.start()

    async def once() -> float:
        server.script(*replies())
        agent.session = memory_session()  # one exchange each time, as the SDK side sends
        started = time.perf_counter()
        agent.submit("echo the fox")
        await agent.wait_idle()
        return time.perf_counter() - started

    once.agent = agent  # type: ignore[attr-defined]
    return once


def _sdk_side(server: OpenAIServer) -> Callable[[], Awaitable[float]]:
    from openai import AsyncOpenAI  # noqa: PLC0415

    client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    messages: list[dict[str, Any]] = []
    tools = [SPEC.to_wire()]

    async def stream(answer: list[str], calls: dict[int, dict[str, str]]) -> None:
        usage = {"include_usage": True}
        response = await client.chat.completions.create(
            model=MODEL_ID, messages=messages, tools=tools, stream=True, stream_options=usage
        )  # type: ignore[call-overload]
        async for chunk in response:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                answer.append(delta.content)
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or (part.id or "")
                if part.function is not None:
                    call["name"] = call["name"] or (part.function.name or "")
                    call["arguments"] += part.function.arguments or ""

    async def once() -> float:
        server.script(*replies())
        messages.clear()
        started = time.perf_counter()
        messages.append({"role": "user", "content": "echo the fox"})
        answer: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        await stream(answer, calls)
        wire = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()
        ]
        messages.append({"role": "assistant", "content": "".join(answer), "tool_calls": wire})
        for c in calls.values():
            output = await echo(json.loads(c["arguments"]))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": output})
        final: list[str] = []
        await stream(final, {})
        messages.append({"role": "assistant", "content": "".join(final)})
        return time.perf_counter() - started

    once.client = client  # type: ignore[attr-defined]
    return once


async def _tool_round(rounds: int, per_round: int) -> list[float]:
    ratios = []
    with OpenAIServer() as server:
        for _ in range(rounds):
            ours, theirs = await _harness_side(server), _sdk_side(server)
            await ours()
            await theirs()  # warm-up: imports, first connections
            a, b = [], []
            for _ in range(per_round):
                a.append(await ours())
                b.append(await theirs())
            await ours.agent.close()  # type: ignore[attr-defined]
            await theirs.client.close()  # type: ignore[attr-defined]
            ratios.append(statistics.median(a) / statistics.median(b))
            _round(a, b)
    return ratios


async def _mcp_call(rounds: int, per_round: int) -> list[float]:
    from mcp import ClientSession  # noqa: PLC0415
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

    command = [sys.executable, str(MCP_SERVER)]
    box = open_toolbox(tools_settings({"mcp": {"bench": {"command": command}}}))
    await box.start(print)
    params = StdioServerParameters(command=command[0], args=command[1:])
    text = json.loads(ARGS)
    ratios = []
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            call = ToolCall("c", "bench__echo", ARGS)
            await box.run(call)
            await session.call_tool("echo", text)
            for _ in range(rounds):
                a, b = [], []
                for _ in range(per_round):
                    started = time.perf_counter()
                    result = await box.run(call)
                    a.append(time.perf_counter() - started)
                    assert result.ok, result.text
                    started = time.perf_counter()
                    await session.call_tool("echo", text)
                    b.append(time.perf_counter() - started)
                ratios.append(statistics.median(a) / statistics.median(b))
                _round(a, b)
    finally:
        await box.aclose()
    return ratios


def _round(ours: list[float], theirs: list[float]) -> None:
    ms = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
    print(f"  round medians: harness {ms[0]:.2f} ms, SDK {ms[1]:.2f} ms")


def _line(name: str, ratios: list[float]) -> None:
    spread = f"{min(ratios):.3f}\N{EN DASH}{max(ratios):.3f}"
    print(f"{name:<52} ratio {statistics.median(ratios):.3f} (min-max {spread})  target <= 1.2")


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's signature)
    rounds, per_round = (3, 10) if quick else (5, 40)
    print(f"{rounds} rounds x {per_round} exchanges per side, interleaved; ratio = harness / SDK medians")
    _line("one tool round (model→call→result→model)", asyncio.run(_tool_round(rounds, per_round)))
    _line("one MCP tool call (Toolbox.run vs ClientSession)", asyncio.run(_mcp_call(rounds, per_round)))
