"""The harness over a real OpenAI-compatible HTTP server: what reaches the model; failures as terminals."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tickloop.audit import read_ledger, session_file_name, verify_file
from tickloop.harness import Agent, TickOptions, open_chat_agent
from tickloop.models.openai_compat import OpenAICompatModel
from tickloop.protocol.policy import DEFAULT_POLICY_TEXT
from tickloop.testing.openai_server import OpenAIServer, Reply

WAIT = 10.0


def model_for(server: OpenAIServer, *, timeout_s: float = 2.0) -> OpenAICompatModel:
    return OpenAICompatModel("test", base_url=server.base_url, model="tickloop-test", timeout_s=timeout_s)


def chat_agent(tmp_path: Path, server: OpenAIServer) -> Agent:
    """A chat on files (session ``h``, its ledger under ``audit``) against ``server``."""
    options = TickOptions.from_mapping({"delayMs": 0, "auditDir": str(tmp_path / "audit")})
    return open_chat_agent(
        model_for(server), sessions_dir=tmp_path / "sessions", session_id="h", tick=options
    )


async def feed(agent: Agent, lines: list[str]) -> None:
    """Submit each line once the agent is idle again, as a scripted chat does."""
    for line in lines:
        agent.submit(line)
        async with asyncio.timeout(WAIT):
            await agent.wait_idle()


async def run_chat(tmp_path: Path, server: OpenAIServer, lines: list[str]) -> list[dict[str, object]]:
    """Drive a chat on files against ``server``; return its (verified) ledger records."""
    agent = chat_agent(tmp_path, server)
    await agent.start()
    try:
        await feed(agent, lines)
    finally:
        await agent.close()
    path = tmp_path / "audit" / session_file_name("h")
    report, _ = verify_file(path)
    assert report.ok, report.violations
    return read_ledger(path).records()


@pytest.mark.parametrize(
    ("failure", "fragment"),
    [
        (Reply.error(500, "boom"), "500"),
        (Reply.error(429, "slow down"), "429"),
        (Reply.malformed(after=1), ""),
        (Reply.disconnect(after=1), ""),
        (Reply.stall(after=1, seconds=30), ""),
    ],
)
async def test_provider_failure_mid_run_is_an_error_terminal_that_stops_the_run(
    tmp_path: Path, failure: Reply, fragment: str
) -> None:
    """An HTTP error, a malformed chunk, a disconnect or a stall mid-stream ends that turn with an
    `error` terminal (never a hang), and the run stops on it with the rule that says why."""
    with OpenAIServer(default=Reply.text("fine", chunks=2)) as server:
        server.script(Reply.text("natural", chunks=2), Reply.text("step one", chunks=2), failure)
        records = await run_chat(tmp_path, server, ["hello", "/tick 3"])
    terminals = [(r["step"], r["status"]) for r in records if r["type"] == "tick_terminal"]
    assert terminals == [(1, "completed"), (2, "error")]
    assert records[-1]["type"] == "loop_stopped"
    assert records[-1]["rule"] == "next.terminal_not_completed"
    assert sum(r["type"] == "tick_enqueued" for r in records) == 2
    sessions = (tmp_path / "sessions").glob("*.jsonl")
    text = "".join(p.read_text() for p in sessions)
    assert fragment in text


async def test_token_usage_from_the_server_reaches_the_ledger(tmp_path: Path) -> None:
    """tick_terminal records carry the token usage the server reported in its stream."""
    with OpenAIServer(default=Reply(content="ok", chunks=2, usage=(11, 7))) as server:
        records = await run_chat(tmp_path, server, ["hello", "/tick 2"])
    usages = [r.get("usage") for r in records if r["type"] == "tick_terminal"]
    assert usages == [{"inputTokens": 11, "outputTokens": 7}] * 2


async def test_a_server_that_streams_no_usage_is_recorded_as_reporting_none(tmp_path: Path) -> None:
    """Against a server that ignores stream_options (llama-cpp-python), each completed tick_terminal
    says `usageReported: false` and carries no made-up counts; so does `tickloop sessions show`."""
    with OpenAIServer(default=Reply(content="ok", chunks=2, report_usage=False)) as server:
        records = await run_chat(tmp_path, server, ["hello", "/tick 2"])
        asked = [b.get("stream_options") for b in server.bodies()]
    assert asked == [{"include_usage": True}] * 3
    terminals = [r for r in records if r["type"] == "tick_terminal"]
    assert [(r["status"], r.get("usageReported"), r.get("usage")) for r in terminals] == [
        ("completed", False, None)
    ] * 2
    show = ["sessions", "show", "h", "--sessions-dir", str(tmp_path / "sessions")]
    shown = subprocess.run(
        [sys.executable, "-m", "tickloop", *show], capture_output=True, text=True, check=True, timeout=120
    )
    assert shown.stdout.count("-- completed (the model reported no token usage)") == 3


def test_chat_process_sends_only_natural_messages_and_literal_time_steps(tmp_path: Path) -> None:
    """End to end with real processes: `tickloop chat` against a model server process; the request
    bodies hold the natural message and exactly three literal time steps, never a command line."""
    record = tmp_path / "requests.jsonl"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tickloop.testing.openai_server",
            "--port",
            "0",
            "--reply",
            "ok",
            "--record",
            str(record),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        config = tmp_path / "config.toml"
        config.write_text(
            f'[tick]\ndelayMs = 0\n[model]\nname = "testsrv"\n'
            f'[model.endpoints.testsrv]\nbaseUrl = "{base_url}"\nmodel = "tickloop-test"\n'
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")},
            "TICKLOOP_CONFIG": str(config),
        }
        script = "hello\n/tick 3\n/tick status\n/tick policies\n/help\n"
        chat = subprocess.run(
            [sys.executable, "-m", "tickloop", "chat", "--session", "seam"],
            input=script,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
            check=False,
        )
        assert chat.returncode == 0, chat.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    bodies = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(bodies) == 4
    user_texts = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "user"]
    assert user_texts == ["hello", DEFAULT_POLICY_TEXT, DEFAULT_POLICY_TEXT, DEFAULT_POLICY_TEXT]
    every = [m["content"] for body in bodies for m in body["messages"]]
    assert not any(str(text).lstrip().startswith("/") for text in every)
    ledger = tmp_path / ".tickloop-audit" / session_file_name("seam")
    verify = subprocess.run(
        [sys.executable, "-m", "tickloop", "audit", "verify", str(ledger)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout
    assert "3 time steps enqueued" in verify.stdout


async def test_a_chat_session_keeps_one_connection_and_closes_it_at_the_end(tmp_path: Path) -> None:
    """A chat session sends its natural turn and its time steps over one kept connection (a loopback
    model otherwise connects anew per call), and closing the session closes that connection."""
    with OpenAIServer(default=Reply.text("ok", chunks=2)) as server:
        agent = chat_agent(tmp_path, server)
        await agent.start()
        try:
            await feed(agent, ["hello", "/tick 2"])
            assert len(server.bodies()) == 3
            assert len({r.client_port for r in server.requests}) == 1
            assert server.open_connections == 1
        finally:
            await agent.close()
        assert await asyncio.to_thread(server.wait_connections_closed, WAIT)
