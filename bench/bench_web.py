"""The dashboard: page render time against the raw store queries the page needs, and SSE latency.

1. **Render ratio.** Every page that reads the store (``PAGES``), each requested through the real
   ASGI app (routing, guards, the worker-thread hop on PostgreSQL, the page, the security headers)
   with a logged-in session, against the same store reads called directly in the same run, in
   windows of at least 50 ms each. Sizes: 1,000 / 100,000 / 1,000,000 progress rows with 100 /
   10,000 / 100,000 intents (50 of them waiting), loaded with bulk inserts. Target ratio <= 2, and
   flat from the smallest size to the largest. Each line shows the median ratio over rounds with its
   min-max.
   On SQLite also in instructions (callgrind, when valgrind is installed): a child process makes N
   page requests, another N raw reads, a third only the set-up, which is subtracted from both. The
   count does not depend on the other load of a shared machine, as the wall-clock ratio does.
2. **SSE latency.** A real uvicorn server with the default poll (1 s); a client on ``/events``; the
   time from a store write (a progress row, as a tick writes) to the ``change`` event arriving.
   Target <= 2 s; reported as median, p90 and min-max over the samples.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

from bench._util import instructions, percentile
from bench.bench_store import _analyze, _database
from bench.store_load import seed_intents, seed_progress
from tickloop.config import Settings
from tickloop.operator.domain import IntentStatus, NewPlanStep, NewProgress, Outcome, TickKind
from tickloop.operator.notices import ATTENTION
from tickloop.operator.store import Store, open_store
from tickloop.operator.store.base import EPOCH
from tickloop.web.app import SESSION_COOKIE, WebConfig, create_app
from tickloop.web.pages import ATTENTION_ROWS, TABLE_ROWS, TIMELINE_ROWS, WAITING_LISTED
from tickloop.web.proposals import TRAIL_SHOWN

P = "r"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOST = "127.0.0.1:8765"
INTENT_SHOWN = 1  #: the intent page shows the oldest waiting intent


def _config(port: int = 8765) -> WebConfig:
    return WebConfig(
        settings=Settings(),
        profiles=[P],
        sessions_dir=Path("/nonexistent"),
        audit_dir=Path("/nonexistent"),
        state_dir=Path("/nonexistent"),
        allowed_hosts={HOST, f"127.0.0.1:{port}"},
    )


async def _get(app: Any, path: str, cookie: str) -> int:
    """One GET through the ASGI app; the status (the body is read and dropped)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(b"host", HOST.encode()), (b"cookie", f"{SESSION_COOKIE}={cookie}".encode())],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


def _overview_raw(store: Store) -> None:
    """Exactly the reads the overview makes: its one snapshot (one statement on PostgreSQL, the reads
    one by one on SQLite), which also refuses an unknown profile."""
    kinds = [k.value for k in TickKind if k is not TickKind.MONITOR]
    store.overview_snapshot(P, kinds=kinds, waiting=WAITING_LISTED, since=NOW - timedelta(days=2))


def _approvals_raw(store: Store) -> None:
    """Exactly the reads the approvals page makes: the true count and the oldest page of 20 (+1 to
    know whether another page follows); untainted intents name no observations."""
    store.get_profile(P)
    store.count_intents(P, status=IntentStatus.REQUIRES_APPROVAL)
    store.intents_oldest(P, status=IntentStatus.REQUIRES_APPROVAL, limit=21)


def _board_raw(store: Store) -> None:
    """The board's reads: the profile, the active goal, the tasks and the goal's plan."""
    store.get_profile(P)
    goal = store.active_goal_model(P)
    store.list_tasks(P)
    if goal is not None:
        store.list_plan(P, goal.version)


def _timeline_raw(store: Store) -> None:
    """The timeline's reads: the profile and the newest rows its chart draws (the table is their head)."""
    store.get_profile(P)
    store.recent_progress(P, limit=TIMELINE_ROWS)


def _intents_raw(store: Store) -> None:
    """The intents page's reads: the profile and the newest page of every intent (+1: is there more)."""
    store.get_profile(P)
    store.search_intents(P, limit=TABLE_ROWS + 1)


def _intent_raw(store: Store) -> None:
    """One waiting intent's page: the profile, the intent, the log lines and progress rows that name
    it, and its card (no plan step, no recorded observations here)."""
    store.get_profile(P)
    store.get_intent(P, INTENT_SHOWN)
    store.notifications_for_intent(P, INTENT_SHOWN, limit=TRAIL_SHOWN)
    store.progress_for_intent(P, INTENT_SHOWN, limit=TRAIL_SHOWN)


def _attention_raw(store: Store) -> None:
    """The attention page's reads: the profile (twice: the page's check and the timezone), today's
    spends and the newest recorded decisions of the attention gate."""
    store.get_profile(P)
    store.get_profile(P)
    store.attention_spends(P, since=NOW - timedelta(days=1))
    store.list_notifications(P, since=EPOCH, limit=ATTENTION_ROWS, channel=ATTENTION, kind=ATTENTION)


#: page name -> (its path, exactly the store reads it makes), for every page that reads the store
PAGES: dict[str, tuple[str, Callable[[Store], None]]] = {
    "overview": (f"/p/{P}/", _overview_raw),
    "approvals": (f"/p/{P}/approvals", _approvals_raw),
    "board": (f"/p/{P}/board", _board_raw),
    "timeline": (f"/p/{P}/timeline", _timeline_raw),
    "intents": (f"/p/{P}/intents", _intents_raw),
    "intent": (f"/p/{P}/intents/{INTENT_SHOWN}", _intent_raw),
    "attention": (f"/p/{P}/attention", _attention_raw),
}


def _timed(fn: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


async def _timed_page(app: Any, path: str, cookie: str, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        await _get(app, path, cookie)
    return (time.perf_counter() - start) / repeat


async def _ratios(
    store: Store, app: Any, cookie: str, *, rounds: int, repeat: int, window: float
) -> dict[str, list[float]]:
    """Page time / raw time per round, one event loop for every request (as in the server). Each
    page is timed ``repeat`` times at least, and often enough that its raw reads fill ``window``
    seconds: twenty requests of a 0.1 ms page were a 2 ms window, which one context switch doubled."""
    out: dict[str, list[float]] = {name: [] for name in PAGES}
    for name, (path, raw) in PAGES.items():
        assert await _get(app, path, cookie) == 200, path
        once = _timed(lambda: raw(store), repeat)  # noqa: B023  (called within this iteration)
        times = max(repeat, math.ceil(window / max(once, 1e-7)))
        for _ in range(rounds):
            page = await _timed_page(app, path, cookie, times)
            base = _timed(lambda: raw(store), times)  # noqa: B023  (called within this iteration)
            out[name].append(page / base)
    return out


def _seed_pages(store: Store) -> None:
    """What a person's store holds besides rows: a board of 12 tasks, an active goal with a plan of 8
    steps, and 100 decisions of the attention gate."""
    store.create_profile(P, now=NOW)
    tasks = [store.add_task(P, f"task {i}: write section {i}", now=NOW, priority=i % 4) for i in range(12)]
    goal = store.add_goal_model(P, title="Ship the thesis", now=NOW)
    store.activate_goal_model(P, goal.version, now=NOW)
    store.replace_plan(P, goal.version, [NewPlanStep(t.title, t.id) for t in tasks[:8]], now=NOW)
    for i in range(100):
        body = json.dumps({"check": "budget", "kind": "approval", "source": "fast", "sent": i % 3 == 0})
        at = NOW - timedelta(minutes=10 * i)
        store.log_notification(
            P, channel=ATTENTION, kind=ATTENTION, subject=f"decision {i}", body=body, now=at
        )


def _renders(backend: str, url: str, *, quick: bool) -> None:
    sizes = [(1_000, 100), (100_000, 10_000)] + ([] if quick else [(1_000_000, 100_000)])
    rounds, repeat, window = (3, 5, 0.01) if quick else (7, 20, 0.05)
    with open_store(url) as store:
        _seed_pages(store)
        seed_intents(url, P, 50, status=IntentStatus.REQUIRES_APPROVAL, action_type="email")
        app, board = create_app(store, _config())
        cookie = board.sessions.start(now=datetime.now(UTC)).id
        have_rows, have_intents = 0, 50
        for rows, intents in sizes:
            loaded = time.perf_counter()
            seed_progress(url, P, rows - have_rows)
            seed_intents(url, P, intents - have_intents, status=IntentStatus.SENT)
            have_rows, have_intents = rows, intents
            _analyze(url)
            took = time.perf_counter() - loaded
            ratios = asyncio.run(
                _ratios(board.reads, app, cookie, rounds=rounds, repeat=repeat, window=window)
            )
            for name, values in ratios.items():
                print(
                    f"{backend}: {name:<9} {rows:>9,} rows {intents:>7,} intents  render/raw "
                    f"{median(values):5.2f} (min {min(values):.2f} max {max(values):.2f})  target <= 2"
                    f"   [loaded in {took:.1f}s]"
                )
            if backend == "sqlite" and rows == sizes[0][0]:
                _renderinstructions(url, quick=quick)


def _renderinstructions(url: str, *, quick: bool) -> None:
    """Page / raw in instructions, each page's N requests against N raw reads in fresh processes."""
    if shutil.which("valgrind") is None:
        print("sqlite: render/raw in instructions: valgrind is not installed, not measured")
        return
    n = 10 if quick else 40
    child = [sys.executable, "-m", "bench._web_child"]
    subprocess.run([*child, "page", "overview", "0", url], check=True, timeout=120)  # bytecode cache
    # One hash seed for the three runs: a random one moved the set-up's count (and so the difference
    # from which a request's count is read) by up to a tenth of the intent page's 0.4 M per request.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    for page in PAGES:
        setup = instructions([*child, "page", page, "0", url], env)
        counts = {m: instructions([*child, m, page, str(n), url], env) - setup for m in ("page", "raw")}
        print(
            f"sqlite: {page:<9} render/raw in instructions {counts['page'] / counts['raw']:5.2f} "
            f"({counts['page'] / n / 1e6:.2f} M against {counts['raw'] / n / 1e6:.2f} M per request, "
            f"{n} each, callgrind)  target <= 2"
        )


async def _hammer(port: int, path: str, cookie: str, *, connections: int, seconds: float) -> float:
    """Requests per second for ``path`` over ``connections`` keep-alive connections of our own."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {SESSION_COOKIE}={cookie}\r\n\r\n"
    ).encode()
    done = 0
    stop = time.perf_counter() + seconds

    async def one() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < stop:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            done += 1
        writer.close()
        await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(connections)))
    return done / (time.perf_counter() - started)


def _throughput(backend: str, url: str, *, quick: bool) -> None:
    """The overview's request rate against a static file's, same server, same run, 1 and 8 connections."""
    import uvicorn  # noqa: PLC0415

    port = _free_port()
    seconds, rounds = (1.0, 2) if quick else (3.0, 5)
    with open_store(url) as store:
        app, board = create_app(store, _config(port))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        cookie = board.sessions.start(now=datetime.now(UTC)).id
        for connections in (1, 8):
            ratios = []
            for _ in range(rounds):
                static = asyncio.run(
                    _hammer(port, "/static/style.css", cookie, connections=connections, seconds=seconds)
                )
                page = asyncio.run(
                    _hammer(port, f"/p/{P}/", cookie, connections=connections, seconds=seconds)
                )
                ratios.append(page / static)
            print(
                f"{backend}: overview / static file, {connections} connection(s): {median(ratios):.2f} "
                f"(min {min(ratios):.2f} max {max(ratios):.2f}; last {page:.0f} vs {static:.0f} req/s)"
                + ("  target >= 0.6" if connections == 8 and backend == "postgres" else "")
            )
        server.should_exit = True
        thread.join(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sse_latency(url: str, *, quick: bool) -> None:
    import uvicorn  # noqa: PLC0415

    samples = 4 if quick else 12
    port = _free_port()
    with open_store(url) as store:
        store.create_profile("sse", now=NOW)
        config = _config(port)
        config.profiles = ["sse"]
        app, board = create_app(store, config)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        cookie = board.sessions.start(now=datetime.now(UTC)).id
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/events", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})
        stream = conn.getresponse()
        _next_event(stream)  # hello
        latencies = []
        for i in range(samples):
            time.sleep(0.37 * (i % 5))  # writes land at different points of the poll cycle
            at = datetime.now(UTC)
            started = time.perf_counter()
            store.record_progress("sse", NewProgress("fast", Outcome.DONE, at, at))
            assert _next_event(stream) == "change"
            latencies.append(time.perf_counter() - started)
        conn.close()
        server.should_exit = True
        thread.join(timeout=10)
    print(
        f"sse: store write -> change event, poll {config.poll_s:.0f} s, {samples} samples: "
        f"median {median(latencies):.2f} s, p90 {percentile(latencies, 90):.2f} s "
        f"(min {min(latencies):.2f} max {max(latencies):.2f})  target <= 2 s"
    )


def _next_event(stream: http.client.HTTPResponse) -> str:
    kind = ""
    while True:
        line = stream.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line == "" and kind:
            return kind


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    for backend in ("sqlite", "postgres"):
        with _database(backend) as url:
            if url is None:
                continue
            _renders(backend, url, quick=quick)
            _throughput(backend, url, quick=quick)
    with _database("sqlite") as url:
        assert url is not None
        _sse_latency(url, quick=quick)
