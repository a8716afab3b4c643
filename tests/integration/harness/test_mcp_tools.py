"""MCP servers as tool providers, for real: the SDK's client and a test server built with the SDK."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tickloop import __version__
from tickloop.audit import session_file_name
from tickloop.harness import Agent, AgentEvent, Notice, open_chat_agent
from tickloop.harness.tools import open_toolbox, tools_settings
from tickloop.models.openai_compat import OpenAICompatModel
from tickloop.testing.openai_server import OpenAIServer, Reply

WAIT = 20.0
SERVER = Path(__file__).with_name("mcp_counter_server.py")


def settings(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    env = {"COUNTER_FILE": str(tmp_path / "counter"), "PID_FILE": str(tmp_path / "pid"), "SLOW_S": "30"}
    server = {"command": [sys.executable, str(SERVER)], "env": env, **extra}
    return {"mcp": {"counter": server}}


def chat(tmp_path: Path, server: OpenAIServer, raw: dict[str, Any], notices: list[str]) -> Agent:
    model = OpenAICompatModel("test", base_url=server.base_url, model="tickloop-test", timeout_s=5)

    def listen(event: AgentEvent) -> None:
        if isinstance(event, Notice):
            notices.append(event.text)

    return open_chat_agent(
        model,
        sessions_dir=tmp_path / "sessions",
        session_id="m",
        tick=None,
        toolbox=open_toolbox(tools_settings(raw)),
        listeners=[listen],
    )


async def drive(agent: Agent, lines: list[str]) -> None:
    await agent.start()
    try:
        for line in lines:
            agent.submit(line)
            async with asyncio.timeout(WAIT):
                await agent.wait_idle()
    finally:
        await agent.close()


def results(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "sessions" / session_file_name("m")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r["type"] == "tool_result"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_servers_tools_are_offered_as_server__tool_and_answer(tmp_path: Path) -> None:
    """The model sees ``counter__echo``; calling it reaches the server and its answer comes back."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(Reply.tool_calls(("c", "counter__echo", '{"text": "from mcp"}')))
        await drive(chat(tmp_path, server, settings(tmp_path), notices), ["echo please"])
        first, second = server.bodies()
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"counter__bump", "counter__echo", "counter__boom", "counter__die"} <= names
    tool = next(m for m in second["messages"] if m["role"] == "tool")
    assert "from mcp" in tool["content"]
    assert [r["status"] for r in results(tmp_path)] == ["ok"]
    assert notices == []


async def test_the_stdio_server_lives_as_long_as_the_chat(tmp_path: Path) -> None:
    """The server process runs during the chat and is gone once the chat is closed."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("hi")) as server:
        agent = chat(tmp_path, server, settings(tmp_path), notices)
        await agent.start()
        try:
            pid = int((tmp_path / "pid").read_text())
            assert pid_alive(pid)
        finally:
            await agent.close()
    for _ in range(100):
        if not pid_alive(pid):
            break
        await asyncio.sleep(0.05)
    assert not pid_alive(pid)


async def test_closing_the_chat_ends_the_servers_whole_process_group(tmp_path: Path) -> None:
    """A child the server started, which ignores stdin, is ended with the server's process group."""
    notices: list[str] = []
    raw = settings(tmp_path)
    script = f'sleep 300 & echo $! > {tmp_path / "child.pid"}; exec "$0" "$@"'
    raw["mcp"]["counter"]["command"] = ["sh", "-c", script, *raw["mcp"]["counter"]["command"]]
    with OpenAIServer(default=Reply.text("hi")) as server:
        agent = chat(tmp_path, server, raw, notices)
        await agent.start()
        try:
            child = int((tmp_path / "child.pid").read_text())
            assert pid_alive(child)
        finally:
            await agent.close()
    for _ in range(100):
        if not pid_alive(child):
            break
        await asyncio.sleep(0.05)
    assert not pid_alive(child)
    assert notices == []


async def test_a_raising_server_tool_is_an_error_result(tmp_path: Path) -> None:
    """A tool that fails on the server gives the model an error result; the turn completes."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("noted")) as server:
        server.script(Reply.tool_calls(("b", "counter__boom", "{}")))
        await drive(chat(tmp_path, server, settings(tmp_path), notices), ["fail"])
    (result,) = results(tmp_path)
    assert result["status"] == "error"
    assert "reported an error: Error executing tool boom" in result["result"]


async def test_a_server_that_dies_gives_a_notice_and_errors_while_the_chat_goes_on(tmp_path: Path) -> None:
    """After the server dies, a notice says so, its tools answer with errors, and turns still complete."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("still here")) as server:
        server.script(
            Reply.tool_calls(("d", "counter__die", "{}")),
            Reply.text("it died"),
            Reply.tool_calls(("e", "counter__echo", '{"text": "x"}')),
        )
        await drive(chat(tmp_path, server, settings(tmp_path), notices), ["die", "echo"])
    statuses = [(r["id"], r["status"]) for r in results(tmp_path)]
    # the call the crash cut off may or may not have taken effect: unknown, never re-run
    assert statuses == [("d", "unknown"), ("e", "error")]
    assert results(tmp_path)[0]["outcome"] == "unknown"
    assert "may or may not have taken effect" in results(tmp_path)[0]["result"]
    assert "MCP server counter is not available" in results(tmp_path)[1]["result"]
    assert any("MCP server counter" in n for n in notices)


async def test_a_server_that_cannot_start_is_a_notice_not_a_crash(tmp_path: Path) -> None:
    """A missing server command gives a clear notice; the chat runs and answers without its tools."""
    notices: list[str] = []
    raw = {"mcp": {"ghost": {"command": [str(tmp_path / "no-such-server")]}}}
    with OpenAIServer(default=Reply.text("fine")) as server:
        await drive(chat(tmp_path, server, raw, notices), ["hello"])
        (body,) = server.bodies()
    assert "tools" not in body
    expected = "MCP server ghost: could not start: command"
    assert any(n.startswith(expected) and "not found" in n for n in notices), notices


async def test_a_server_that_exits_at_start_says_how_to_see_why(tmp_path: Path) -> None:
    """A command that runs but is no MCP server: the notice names the command to run by hand."""
    notices: list[str] = []
    raw = {"mcp": {"quitter": {"command": [sys.executable, "-c", "pass"]}}}
    with OpenAIServer(default=Reply.text("fine")) as server:
        await drive(chat(tmp_path, server, raw, notices), ["hello"])
    assert any("exited during start-up; run `" in n and "-c pass` by hand" in n for n in notices), notices


async def test_interrupting_a_slow_server_call_cancels_it_and_never_repeats_it(tmp_path: Path) -> None:
    """Ctrl-C during an MCP call ends the turn at once; the call is unknown, ran once, is not re-run."""
    notices: list[str] = []
    counter = tmp_path / "counter"
    with OpenAIServer(default=Reply.text("after")) as server:
        server.script(Reply.tool_calls(("s", "counter__bump", '{"label": "slow"}')))
        agent = chat(tmp_path, server, settings(tmp_path), notices)
        await agent.start()
        try:
            agent.submit("slowly")
            async with asyncio.timeout(WAIT):
                while not (counter.exists() and counter.read_text()):
                    await asyncio.sleep(0.02)
            agent.interrupt()
            async with asyncio.timeout(3):  # far below the tool's 30 s: the call was cancelled
                await agent.wait_idle()
            agent.submit("next")
            async with asyncio.timeout(WAIT):
                await agent.wait_idle()
        finally:
            await agent.close()
    assert counter.read_text() == "slow\n"
    (result,) = results(tmp_path)
    assert (result["status"], result["outcome"]) == ("unknown", "unknown")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1, as a real subprocess."""
    port = free_port()
    env = {**os.environ, "COUNTER_FILE": str(tmp_path / "counter")}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_a_server_over_streamable_http_with_a_token_from_the_environment(
    tmp_path: Path, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``url`` server answers calls; its bearer token comes from the variable ``tokenEnv`` names."""
    monkeypatch.setenv("TEST_MCP_TOKEN", "t0ken")
    notices: list[str] = []
    raw = {"mcp": {"remote": {"url": http_server, "tokenEnv": "TEST_MCP_TOKEN"}}}
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(
            Reply.tool_calls(("h", "remote__echo", '{"text": "over http"}'), ("a", "remote__auth", "{}"))
        )
        await drive(chat(tmp_path, server, raw, notices), ["echo"])
    echoed, auth = results(tmp_path)
    assert (echoed["status"], echoed["result"]) == ("ok", "over http")
    assert (auth["status"], auth["result"]) == ("ok", "Bearer t0ken")
    assert notices == []


async def test_a_missing_token_variable_is_a_clear_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tokenEnv`` naming an unset variable says which variable, and the chat goes on."""
    monkeypatch.delenv("TEST_MCP_TOKEN", raising=False)
    notices: list[str] = []
    raw = {"mcp": {"remote": {"url": "http://127.0.0.1:9/mcp", "tokenEnv": "TEST_MCP_TOKEN"}}}
    with OpenAIServer(default=Reply.text("fine")) as server:
        await drive(chat(tmp_path, server, raw, notices), ["hello"])
    assert any("$TEST_MCP_TOKEN is not set" in n for n in notices), notices


async def test_a_call_past_call_timeout_is_unknown_and_never_re_run(tmp_path: Path) -> None:
    """A call with no answer within callTimeoutS is recorded outcome unknown, the model is told it
    may or may not have happened, and the side effect happened once."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("after")) as server:
        server.script(Reply.tool_calls(("s", "counter__bump", '{"label": "slow"}')))
        raw = settings(tmp_path, callTimeoutS=1)
        await drive(chat(tmp_path, server, raw, notices), ["slowly"])
        told = json.dumps(server.bodies()[-1]["messages"])
    (result,) = results(tmp_path)
    assert (result["status"], result["outcome"]) == ("unknown", "unknown")
    assert "no answer within 1 s" in result["result"]
    assert "may or may not have taken effect" in told
    assert (tmp_path / "counter").read_text() == "slow\n"


async def test_the_client_introduces_itself_and_the_servers_stderr_goes_to_a_log(tmp_path: Path) -> None:
    """The server sees clientInfo tickloop with its version; a tool of a server that failed to
    start says the server is not available, not "unknown tool"."""
    notices: list[str] = []
    raw = settings(tmp_path)
    raw["mcp"]["ghost"] = {"command": [str(tmp_path / "no-such-server")]}
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(Reply.tool_calls(("w", "counter__whoami", "{}"), ("g", "ghost__anything", "{}")))
        await drive(chat(tmp_path, server, raw, notices), ["who"])
    who, ghost = results(tmp_path)
    assert who["result"] == f"tickloop {__version__}"
    assert ghost["status"] == "error"
    assert "MCP server ghost is not available (could not start: command" in ghost["result"]
    assert "unknown tool" not in ghost["result"]
    assert Path(os.environ["XDG_STATE_HOME"], "tickloop", "mcp-logs", "counter.log").exists()


async def test_list_changed_relists_and_colliding_names_are_refused(tmp_path: Path) -> None:
    """After notifications/tools/list_changed the model is offered the new tool; of get.x and get_x,
    which both become counter__get_x, the second is refused with a notice instead of shadowing."""
    notices: list[str] = []
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(
            Reply.tool_calls(("g", "counter__grow", "{}")),
            Reply.text("grown"),
            Reply.tool_calls(("e", "counter__extra", "{}"), ("x", "counter__get_x", "{}")),
        )
        raw = settings(tmp_path)
        raw["mcp"]["counter"]["env"]["COLLIDE"] = "1"
        agent = chat(tmp_path, server, raw, notices)
        await agent.start()
        try:
            agent.submit("grow")
            async with asyncio.timeout(WAIT):
                await agent.wait_idle()
            async with asyncio.timeout(WAIT):
                while "counter__extra" not in {s.name for s in agent.toolbox.specs()}:
                    await asyncio.sleep(0.05)
            agent.submit("use it")
            async with asyncio.timeout(WAIT):
                await agent.wait_idle()
        finally:
            await agent.close()
        offered = [t["function"]["name"] for t in server.bodies()[-1]["tools"]]
    assert offered.count("counter__get_x") == 1
    extra, getx = results(tmp_path)[1:]
    assert (extra["status"], extra["result"]) == ("ok", "extra is here")
    assert getx["result"] == "get.x"
    assert any("'get_x' is refused" in n and "counter__get_x" in n for n in notices), notices


class _Refuser(BaseHTTPRequestHandler):
    """Answers every request with the status in the server's ``status`` attribute."""

    def do_POST(self) -> None:  # the http.server name
        status = self.server.status  # type: ignore[attr-defined]
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "7")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST  # noqa: N815

    def log_message(self, *_args: Any) -> None:
        """Quiet."""


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, "HTTP 401 Unauthorized: the server refused the bearer token in $TEST_MCP_TOKEN"),
        (403, "HTTP 403 Forbidden"),
        (429, "HTTP 429 Too Many Requests: the server is rate-limiting this client; retry after 7 s"),
    ],
)
async def test_http_refusals_name_their_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, words: str
) -> None:
    """A server that answers 401, 403 or 429 gives a notice naming the status (and Retry-After)."""
    monkeypatch.setenv("TEST_MCP_TOKEN", "t0ken")
    refuser = ThreadingHTTPServer(("127.0.0.1", 0), _Refuser)
    refuser.status = status  # type: ignore[attr-defined]
    thread = threading.Thread(target=refuser.serve_forever, daemon=True)
    thread.start()
    notices: list[str] = []
    url = f"http://127.0.0.1:{refuser.server_address[1]}/mcp"
    raw = {"mcp": {"remote": {"url": url, "tokenEnv": "TEST_MCP_TOKEN"}}}
    try:
        with OpenAIServer(default=Reply.text("fine")) as server:
            await drive(chat(tmp_path, server, raw, notices), ["hello"])
    finally:
        refuser.shutdown()
        refuser.server_close()
        thread.join(timeout=10)
    assert any(n.startswith("MCP server remote: could not start: ") and words in n for n in notices), notices


@pytest.mark.parametrize("bad", [False, True])
async def test_structured_content_is_used_only_when_valid_for_the_output_schema(
    tmp_path: Path, bad: bool
) -> None:
    """Structured content that meets the tool's outputSchema is what the model reads; content that
    breaks it is refused as an error result naming the tool, not passed on."""
    notices: list[str] = []
    raw = settings(tmp_path)
    if bad:
        raw["mcp"]["counter"]["env"]["BAD_SCHEMA"] = "1"
    with OpenAIServer(default=Reply.text("done")) as server:
        server.script(Reply.tool_calls(("w", "counter__weather", "{}")))
        await drive(chat(tmp_path, server, raw, notices), ["weather"])
    (result,) = results(tmp_path)
    if bad:
        assert result["status"] == "error"
        assert "Invalid structured content returned by tool weather" in result["result"]
    else:
        assert (result["status"], json.loads(result["result"])) == ("ok", {"temperature": 36.5})


async def test_mcp_commands_exist_only_with_mcp_servers(tmp_path: Path) -> None:
    """/mcp is a command of a chat with MCP servers (listed by /help), and not of one without."""
    with OpenAIServer(default=Reply.text("done")) as server:
        with_mcp = chat(tmp_path, server, settings(tmp_path), [])
        await with_mcp.start()
        try:
            listed = with_mcp.submit("/help")
            resources = with_mcp.submit("/mcp resources counter")
        finally:
            await with_mcp.close()
        workspace = open_chat_agent(
            OpenAICompatModel("test", base_url=server.base_url, model="tickloop-test", timeout_s=5),
            sessions_dir=tmp_path / "sessions",
            session_id="w",
            tick=None,
            toolbox=open_toolbox(
                tools_settings({"enabled": ["workspace"], "workspace": {"root": str(tmp_path)}})
            ),
        )
        names = workspace.commands.names()
        workspace.session.close()
    assert listed is not None
    assert "/mcp" in listed.text
    assert resources is not None
    assert (resources.ok, resources.text) == (True, "asking counter for resources")
    assert "mcp" not in names
