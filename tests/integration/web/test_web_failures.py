"""The dashboard honest under failure and load, against a real `tickloop web`: hostile input gets
400 (never 500), a body over the limit is refused before it is read on every route, live-update
streams are capped with 503, and a locked store answers "not recorded — try again" within seconds."""

from __future__ import annotations

import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from pg_cluster import throwaway_cluster
from test_web_browser import P, staged_world
from web_helpers import Dashboard, MailSink, dashboard

from tickloop.operator.domain import IntentStatus


@contextmanager
def logged_in(web: Dashboard) -> Iterator[tuple[httpx.Client, str]]:
    """An HTTP client with a session (through the login form, like a browser) and its CSRF token."""
    with httpx.Client(base_url=web.base, timeout=20, follow_redirects=False) as client:
        yield client, _log_in(client, web)


def _log_in(client: httpx.Client, web: Dashboard) -> str:
    form = client.get(web.login_url)
    pre = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert pre is not None
    token = web.login_url.split("token=")[1]
    answer = client.post("/login", data={"csrf": pre.group(1), "token": token})
    assert answer.status_code == 303, answer.text
    page = client.get(f"/p/{P}/approvals")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    return csrf.group(1)


def raw(port: int, head: bytes, body: bytes = b"", *, wait: float = 10.0) -> bytes:
    """Send ``head`` (and ``body``) on a socket of our own; the reply's first bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(head + body)
        return sock.recv(4096)


def test_hostile_input_gets_400_never_500(tmp_path: Path, sqlite_url: str, sink: MailSink) -> None:
    """A NUL in a note, a huge id, a malformed form, too many fields: each gets a 4xx page in words,
    and the intent still waits."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web, logged_in(web) as (client, csrf):
        decide = f"/p/{P}/intents/{intent_id}/decide"
        cases = {
            "nul in note": (decide, {"csrf": csrf, "decision": "approve", "note": "ok\x00"}),
            "huge id": (f"/p/{P}/intents/{'9' * 40}/decide", {"csrf": csrf, "decision": "approve"}),
            "64-bit overflow": (f"/p/{P}/intents/{2**63}/decide", {"csrf": csrf, "decision": "approve"}),
            "no decision": (decide, {"csrf": csrf}),
            "another intent": (decide, {"csrf": csrf, "decision": "approve", "intent": "7"}),
            "too many fields": (
                decide,
                {"csrf": csrf, "decision": "approve", **{f"f{i}": "x" for i in range(80)}},
            ),
        }
        for name, (path, form) in cases.items():
            answer = client.post(path, data=form)
            assert answer.status_code == 400, (name, answer.status_code, answer.text[:300])
            assert "Refused" in answer.text or "must say" in answer.text or "names another" in answer.text, (
                name
            )
        for body in (b"%zz&&&=\xff\xfe", b"csrf=" + csrf.encode() + b"&decision=approve&note=%00"):
            answer = client.post(
                decide, content=body, headers={"content-type": "application/x-www-form-urlencoded"}
            )
            assert answer.status_code in {400, 403}, (body, answer.status_code)
        assert client.get(f"/p/{P}/intents/{'9' * 40}").status_code == 400
        assert client.get(f"/p/{P}/approvals?after={'9' * 40}&decided=x").status_code == 200
    with world.store() as store:
        assert store.get_intent(P, intent_id).status is IntentStatus.REQUIRES_APPROVAL


def test_a_body_over_the_limit_is_refused_before_it_is_read_on_every_route(
    tmp_path: Path, sqlite_url: str, sink: MailSink
) -> None:
    """A 300 MB POST to /login (no session needed) is answered 413 at once, with no byte of its body
    sent; a chunked one is cut off past 64 KiB; the server's peak memory stays where it was."""
    world, _ = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        port = int(web.base.rsplit(":", 1)[1])
        host = f"Host: 127.0.0.1:{port}\r\n".encode()
        for path in (b"/login", b"/logout", f"/p/{P}/intents/1/decide".encode()):
            head = b"POST " + path + b" HTTP/1.1\r\n" + host + b"Content-Length: 314572800\r\n\r\n"
            started = time.monotonic()
            reply = raw(port, head)
            assert reply.startswith(b"HTTP/1.1 413"), (path, reply[:200])
            assert time.monotonic() - started < 5
        chunk = b"x" * 16384
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40))
        head = b"POST /login HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\n\r\n"
        assert raw(port, head, chunked).startswith(b"HTTP/1.1 413")
        status = Path(f"/proc/{web.proc.pid}/status").read_text()
        peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]
        assert peak_kb < 200_000, f"the server's peak memory reached {peak_kb} kB"


def test_live_update_streams_are_capped_and_the_page_can_poll_instead(
    tmp_path: Path, sqlite_url: str, sink: MailSink
) -> None:
    """With --max-streams 2, a third stream gets 503 with Retry-After; ``?once=1`` still answers
    the waiting count; closing a stream frees its place."""
    world, _ = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world, "--max-streams", "2") as web, logged_in(web) as (client, _):
        with client.stream("GET", "/events") as one, client.stream("GET", "/events") as two:
            assert (one.status_code, two.status_code) == (200, 200)
            third = client.get("/events")
            assert third.status_code == 503
            assert int(third.headers["retry-after"]) > 0
            once = client.get("/events?once=1")
            assert once.status_code == 200
            assert once.json()["waiting"] == {P: 1}
        deadline = time.monotonic() + 10
        while client.get("/events?once=1").status_code == 200:
            with client.stream("GET", "/events") as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "a closed stream never freed its place"
            time.sleep(0.2)


@pytest.mark.timeout(120)
def test_a_locked_store_says_not_recorded_within_seconds_and_the_retry_records_once(
    tmp_path: Path, sqlite_url: str, sink: MailSink
) -> None:
    """SQLite held by another process: the decision answers 503 "Not recorded — try again" in about
    3 s (not a bare 500 after 30); meanwhile the pages still show (reads never wait for a writer,
    not even for the abandoned decision still waiting for the lock); once the lock goes, the same
    POST records it, and again is safe."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web, logged_in(web) as (client, csrf):
        form = {"csrf": csrf, "decision": "approve", "note": "yes"}
        holder = sqlite3.connect(tmp_path / "store.db", timeout=1, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            answer = client.post(f"/p/{P}/intents/{intent_id}/decide", data=form)
            took = time.monotonic() - started
            started = time.monotonic()
            page = client.get(f"/p/{P}/approvals")
            assert page.status_code == 200, page.text[:300]
            assert f"Approve #{intent_id}" in page.text
            assert time.monotonic() - started < 2
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert answer.status_code == 503, answer.text[:300]
        assert "Not recorded — try again" in answer.text
        assert took < 8
        deadline = time.monotonic() + 40
        while True:
            again = client.post(f"/p/{P}/intents/{intent_id}/decide", data=form)
            if again.status_code == 303 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert again.status_code == 303, again.text[:300]
        assert client.post(f"/p/{P}/intents/{intent_id}/decide", data=form).status_code == 303
    with world.store() as store:
        intent = store.get_intent(P, intent_id)
        assert intent.status is IntentStatus.APPROVED
        assert intent.decision_id is not None
        assert store.get_decision(P, intent.decision_id).note == "yes"


def test_a_stopped_postgresql_says_not_recorded_within_seconds_and_the_retry_records_once(
    tmp_path: Path, sink: MailSink
) -> None:
    """PostgreSQL stopped under a running dashboard (a private cluster, ``pg_ctl stop``): a decision
    answers 503 "Not recorded — try again" and a page "Nothing to show" in a few seconds, never a
    bare 500; once the server is back, the same POST records the decision once, and again is safe."""
    with throwaway_cluster() as cluster:
        world, intent_id = staged_world(tmp_path, cluster.url, sink)
        with dashboard(world) as web, logged_in(web) as (client, csrf):
            form = {"csrf": csrf, "decision": "approve", "note": "yes"}
            decide = f"/p/{P}/intents/{intent_id}/decide"
            cluster.stop()
            for _ in range(2):  # the pool's dead connection, then a pool that cannot reconnect
                started = time.monotonic()
                answer = client.post(decide, data=form)
                took = time.monotonic() - started
                assert answer.status_code == 503, answer.text[:300]
                assert "Not recorded — try again" in answer.text
                assert took < 6, took
            page = client.get(f"/p/{P}/approvals")
            assert page.status_code == 503
            assert "Nothing to show — try again" in page.text
            cluster.start()
            deadline = time.monotonic() + 40
            while True:
                again = client.post(decide, data=form)
                if again.status_code == 303 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert again.status_code == 303, again.text[:300]
            assert client.post(decide, data=form).status_code == 303
            assert "Internal Server Error" not in "".join(web.output)
        with world.store() as store:
            intent = store.get_intent(P, intent_id)
            assert intent.status is IntentStatus.APPROVED
            assert intent.decision_id is not None
            assert store.get_decision(P, intent.decision_id).note == "yes"
