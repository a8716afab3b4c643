"""`tickloop mcp serve --transport http`: a real server on a random port, the SDK's streamable-HTTP
client, and raw requests for the guard (token, Origin, size cap, rate limit, remote binding)."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import Operator, data
from tests.certs import self_signed

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def serving(op: Operator, *flags: str) -> Iterator[str]:
    """`tickloop mcp serve --transport http --port 0 FLAGS`; yields its URL, stops it with SIGTERM."""
    argv = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me", "--transport", "http"]
    proc = subprocess.Popen([*argv, "--port", "0", *flags], stderr=subprocess.PIPE, text=True, env=op.env)
    assert proc.stderr is not None
    try:
        line = ""
        while "serving on" not in line:
            line = proc.stderr.readline()
            assert line, f"server exited: {proc.wait()}"
        yield line.split("serving on ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        proc.stderr.close()


def issue_token(op: Operator) -> str:
    return op.cli("mcp", "token").stdout.strip()


async def test_the_sdk_client_works_over_http_with_the_token(op: Operator) -> None:
    """With its bearer token, an agent lists and calls the face over streamable HTTP like over stdio."""
    token = issue_token(op)
    with serving(op) as url:
        assert url.startswith("http://127.0.0.1:")
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            assert {t.name for t in (await client.list_tools()).tools} >= {"stage_intent", "progress"}
            made = data(await client.call_tool("add_task", {"title": "over http"}))["task"]
            text = (await client.read_resource("tickloop://board.txt")).contents[0].text  # type: ignore[union-attr]
            assert "over http" in text
    assert made["title"] in {t["title"] for t in op.json("operator", "board", "--profile", "me")["tasks"]}


def test_wrong_or_missing_token_is_401_and_foreign_origin_is_403(sqlite_op: Operator) -> None:
    """A wrong or missing token gets 401 with an empty body; a foreign Origin gets 403, token or not."""
    token = issue_token(sqlite_op)
    with serving(sqlite_op) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            answer = httpx2.post(url, json=HELLO, headers={**JSON_HEADERS, **auth})
            assert (answer.status_code, answer.content) == (401, b"")
        for origin in ("http://evil.example", f"http://127.0.0.1.evil.example:{port}", "null"):
            headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}", "Origin": origin}
            answer = httpx2.post(url, json=HELLO, headers=headers)
            assert (answer.status_code, answer.content) == (403, b"")
        own = {**JSON_HEADERS, "Authorization": f"Bearer {token}", "Origin": f"http://localhost:{port}"}
        assert httpx2.post(url, json=HELLO, headers=own).status_code == 200


def test_oversized_bodies_and_floods_are_refused(sqlite_op: Operator) -> None:
    """A body over --max-body gets 413; a client past --rate-limit gets 429 with Retry-After."""
    token = issue_token(sqlite_op)
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
    with serving(sqlite_op, "--max-body", "2048") as url:
        big = {**HELLO, "params": {**HELLO["params"], "pad": "x" * 4096}}  # type: ignore[dict-item]
        assert httpx2.post(url, content=json.dumps(big), headers=headers).status_code == 413
    with serving(sqlite_op, "--rate-limit", "10") as url:
        codes = [httpx2.post(url, json=HELLO, headers=headers).status_code for _ in range(4)]
        assert codes[0] == 200
        assert 429 in codes


def test_token_is_shown_once_and_stored_as_a_0600_hash(sqlite_op: Operator, tmp_path: Path) -> None:
    """`tickloop mcp token` prints a token once; the state dir keeps only its hash, owner-readable only."""
    token = issue_token(sqlite_op)
    again = sqlite_op.cli("mcp", "token", ok=False)
    assert again.returncode == 2
    assert "shown only once" in again.stderr
    assert token not in again.stdout + again.stderr
    [path] = Path(sqlite_op.env["XDG_STATE_HOME"]).rglob("mcp-token.json")
    assert path.stat().st_mode & 0o777 == 0o600
    assert token not in path.read_text(encoding="utf-8")
    rotated = sqlite_op.cli("mcp", "token", "--rotate").stdout.strip()
    assert rotated != token


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], "needs TLS"),
    ],
)
def test_a_non_loopback_host_needs_allow_remote_and_tls(
    sqlite_op: Operator, flags: list[str], expected: str
) -> None:
    """Binding beyond loopback is refused unless asked for, and then only with TLS or --insecure-http."""
    done = sqlite_op.cli("mcp", "serve", "--profile", "me", "--transport", "http", *flags, ok=False)
    assert done.returncode == 2
    assert expected in done.stderr


def test_insecure_http_on_the_network_warns(sqlite_op: Operator) -> None:
    """--allow-remote --insecure-http serves, after a warning that the token crosses the network in clear."""
    issue_token(sqlite_op)
    argv = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me", "--transport", "http"]
    flags = ["--host", "0.0.0.0", "--port", "0", "--allow-remote", "--insecure-http"]
    proc = subprocess.Popen([*argv, *flags], stderr=subprocess.PIPE, text=True, env=sqlite_op.env)
    assert proc.stderr is not None
    try:
        first = proc.stderr.readline()
        assert "WARNING" in first
        assert "unencrypted" in first
        assert "serving on http://0.0.0.0:" in proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        proc.stderr.close()


def test_tls_serves_https_with_the_given_certificate(sqlite_op: Operator, tmp_path: Path) -> None:
    """With --certfile/--keyfile the face speaks HTTPS, and the token is still required."""
    cert, key = self_signed(tmp_path)
    token = issue_token(sqlite_op)
    with serving(sqlite_op, "--certfile", str(cert), "--keyfile", str(key)) as url:
        assert url.startswith("https://127.0.0.1:")
        with httpx2.Client(verify=ssl.create_default_context(cafile=str(cert))) as http:
            assert http.post(url, json=HELLO, headers=JSON_HEADERS).status_code == 401
            headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
            assert http.post(url, json=HELLO, headers=headers).status_code == 200


def test_first_http_serve_issues_the_token_and_shows_it_once(sqlite_op: Operator) -> None:
    """Serving HTTP before any token exists issues one, prints it once on stderr, and requires it."""
    argv = [sys.executable, "-m", "tickloop", "mcp", "serve", "--profile", "me", "--transport", "http"]
    proc = subprocess.Popen([*argv, "--port", "0"], stderr=subprocess.PIPE, text=True, env=sqlite_op.env)
    assert proc.stderr is not None
    try:
        assert "bearer token issued (shown once" in proc.stderr.readline()
        token = proc.stderr.readline().strip()
        url = proc.stderr.readline().split("serving on ", 1)[1].strip()
        headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
        assert httpx2.post(url, json=HELLO, headers=headers).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        proc.stderr.close()
    again = sqlite_op.cli("mcp", "token", ok=False)
    assert "shown only once" in again.stderr


def test_rotating_or_revoking_a_token_takes_effect_on_a_running_server(sqlite_op: Operator) -> None:
    """After `mcp token --rotate` the old token gets 401 and the new one works, with no restart; a
    revoked agent's token gets 401 at once."""
    old = issue_token(sqlite_op)
    agent = sqlite_op.cli("mcp", "token", "--name", "cursor").stdout.strip()
    with serving(sqlite_op) as url:

        def status(token: str) -> int:
            headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
            return httpx2.post(url, json=HELLO, headers=headers, timeout=30).status_code

        assert (status(old), status(agent)) == (200, 200)
        new = sqlite_op.cli("mcp", "token", "--rotate").stdout.strip()
        assert (status(old), status(new), status(agent)) == (401, 200, 200)
        sqlite_op.cli("mcp", "token", "--revoke", "cursor")
        assert (status(agent), status(new)) == (401, 200)
    listed = sqlite_op.cli("mcp", "token", "--list").stdout
    assert listed.startswith("default\tissued ")
    assert "cursor" not in listed
    assert new not in listed


async def test_an_agents_intents_record_its_token_name(sqlite_op: Operator) -> None:
    """An intent staged with the token named claude-desktop has origin mcp:claude-desktop, shown by
    `operator intents` (table and --json), and waits for the person."""
    token = sqlite_op.cli("mcp", "token", "--name", "claude-desktop").stdout.strip()
    with serving(sqlite_op) as url:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            # a client cannot claim another name by sending the header itself
            http.headers["x-tickloop-agent"] = "the-person"
            staged = data(await client.call_tool("stage_intent", {"type": "note", "title": "jot"}))["intent"]
    assert staged["origin"] == {"tick_kind": "mcp:claude-desktop", "tainted": True}
    assert staged["status"] == "requires_approval"
    [listed] = sqlite_op.json("operator", "intents", "--profile", "me")
    assert listed["origin"]["tick_kind"] == "mcp:claude-desktop"
    sqlite_op.env["COLUMNS"] = "200"
    table = sqlite_op.cli("operator", "intents", "--profile", "me").stdout
    assert "mcp:claude-desktop" in table


def test_wrong_tokens_do_not_drain_an_agents_bucket(sqlite_op: Operator) -> None:
    """100 wrong-token requests from 127.0.0.1 are refused with 429, and the real agent on 127.0.0.1
    still gets in: unauthenticated requests spend the address's bucket, an agent spends its own."""
    token = issue_token(sqlite_op)
    with serving(sqlite_op, "--rate-limit", "60") as url:
        wrong = {**JSON_HEADERS, "Authorization": "Bearer wrong"}
        codes = [httpx2.post(url, json=HELLO, headers=wrong, timeout=30).status_code for _ in range(100)]
        assert set(codes) == {401, 429}
        # the burst (a tenth of a minute's requests), then about one a second
        assert codes[:6] == [401] * 6
        assert codes.count(429) >= 50
        right = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
        assert httpx2.post(url, json=HELLO, headers=right, timeout=30).status_code == 200
