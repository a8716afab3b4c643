"""The Inspector's session CLI, `mcpdo` (shipped in the same npm package as the Inspector CLI 2.x, under
Node 22), subscribes to an intent of `tickloop mcp serve` over stdio and HTTP, and the update arrives
when the person decides it. The one-shot Inspector CLI has no `resources/subscribe` (a subscription
outlives one call); `mcpdo` keeps the connection in a daemon and streams the notifications."""

from __future__ import annotations

import json
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from mcp_support import Operator
from test_mcp_http import serving
from test_mcp_inspector import private_home
from tests.peers import INSPECTOR_CLI, NODE, require

from tickloop import __version__

#: `mcpdo`'s entry point, beside the Inspector CLI's in @modelcontextprotocol/inspector
MCPDO = INSPECTOR_CLI.parents[2] / "mcpdo" / "build" / "mcp-bin.js"


@contextmanager
def mcpdo_session(op: Operator) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The argv prefix and environment of `mcpdo` with a daemon of its own, stopped at the end."""
    # a short directory: the daemon's socket path must fit in 107 bytes
    daemon = Path(tempfile.mkdtemp(prefix="mcpdo-", dir="/tmp"))
    env = {**private_home(op), "MCP_INSPECTOR_DAEMON_DIR": str(daemon), "MCP_INSPECTOR_SECRET_STORE": "file"}
    # mcpdo runs only when argv[1] is its real path (tests/npm/node_modules is a symlink)
    argv = [str(require(NODE)), str(require(MCPDO).resolve()), "--format", "json"]
    try:
        yield argv, env
    finally:
        subprocess.run([*argv, "daemon", "stop"], env=env, capture_output=True, timeout=60, check=False)
        shutil.rmtree(daemon, ignore_errors=True)


def call(argv: list[str], env: dict[str, str], *args: str) -> Any:
    """One `mcpdo` command; its JSON answer, or the failure named."""
    done = subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def objects(stream: IO[str], found: queue.Queue[Any]) -> None:
    """Each JSON value `mcpdo` streams (pretty-printed, several lines each), onto ``found``."""
    decoder, text = json.JSONDecoder(), ""
    for line in stream:
        text += line
        try:
            value, end = decoder.raw_decode(text.strip())
        except ValueError:
            continue
        found.put(value)
        text = text.strip()[end:]
    found.put(None)


def subscribe_and_decide(op: Operator, argv: list[str], env: dict[str, str]) -> tuple[list[Any], Any]:
    """Stage an intent through the connection, subscribe to it, approve it from the CLI; the
    streamed lines (up to the update) and the intent read again."""
    staged = call(argv, env, "@tl", "tools/call", "stage_intent", "type:=note", 'title:="jot"')
    uri = f"tickloop://intents/{staged['structuredContent']['intent']['id']}"
    streaming = [*argv, "@tl", "resources/subscribe", uri]
    proc = subprocess.Popen(streaming, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    found: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=objects, args=(proc.stdout, found), daemon=True).start()
    try:
        lines = [found.get(timeout=60)]
        assert lines == [{"type": "subscribed", "uri": uri}], lines
        op.cli("operator", "approve", uri.rsplit("/", 1)[1], "--profile", "me")
        lines.append(found.get(timeout=30))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stdout.close()
    read = call(argv, env, "@tl", "resources/read", uri)
    return lines, json.loads(read["contents"][0]["text"])


@pytest.mark.timeout(600)
def test_mcpdo_subscribes_over_stdio_and_the_update_arrives(sqlite_op: Operator) -> None:
    """Over stdio, `mcpdo` subscribes to the intent it staged; when the person approves it,
    notifications/resources/updated arrives for that URI, and reading it shows `approved`."""
    server = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me"]
    pairs = [f"{k}={v}" for k, v in sqlite_op.env.items() if k.startswith(("TICKLOOP_", "XDG_"))]
    flags = [part for pair in pairs for part in ("-e", pair)]
    with mcpdo_session(sqlite_op) as (argv, env):
        call(argv, env, "connect", "--server", "tl", *flags, "--", *server)
        shown = call(argv, env, "connections/show", "tl")
        lines, after = subscribe_and_decide(sqlite_op, argv, env)
    assert shown["serverInfo"] == {"name": "tickloop-operator", "version": __version__}
    assert shown["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert lines[1] == {"type": "resources/updated", "uri": lines[0]["uri"]}
    assert after["intent"]["status"] == "approved"


@pytest.mark.timeout(600)
def test_mcpdo_subscribes_over_http_and_the_update_arrives(sqlite_op: Operator) -> None:
    """Over streamable HTTP with an agent's token, the same: the update reaches the agent on its
    session's event stream."""
    token = sqlite_op.cli("mcp", "token", "--name", "mcpdo").stdout.strip()
    with serving(sqlite_op) as url, mcpdo_session(sqlite_op) as (argv, env):
        auth = ["--header", f"Authorization: Bearer {token}"]
        call(argv, env, "connect", "--server", "tl", "--transport", "http", "--server-url", url, *auth)
        lines, after = subscribe_and_decide(sqlite_op, argv, env)
    assert lines[1] == {"type": "resources/updated", "uri": lines[0]["uri"]}
    assert (after["intent"]["status"], after["intent"]["origin"]["tick_kind"]) == ("approved", "mcp:mcpdo")
