"""The dashboard's Starlette application: thin routes over ``tickloop.web.pages``.

The guards every route passes (host, session, origin, CSRF), the login and the security
headers live in ``tickloop.web.guard``; this module holds the pages and the live-update stream.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from tickloop.errors import NotFoundError, TickloopError, ValidationError
from tickloop.operator.intents import RECONCILE
from tickloop.operator.store.base import Store
from tickloop.web import pages, proposals
from tickloop.web.auth import Session
from tickloop.web.guard import HERE, SESSION_COOKIE, BodyLimit, Guards, SecurityHeaders, WebConfig
from tickloop.web.routes import PageRoutes

__all__ = ["SESSION_COOKIE", "Dashboard", "WebConfig", "create_app"]

#: a page's read: the profile ("" for pages without one) -> the template's context
Reader = Callable[[str], dict[str, Any]]


class Dashboard(Guards):
    """The pages, over one store, behind the guards."""

    def __init__(self, store: Store, config: WebConfig) -> None:
        super().__init__(config)
        self.store = store  #: where decisions are written (in a worker thread: a write may wait)
        reader = store.loop_reader(config.store_timeout_s)
        self.reads = reader or store  #: what the pages read (on the event loop, when it allows)
        self.reads_inline = reader is not None
        #: the newest fingerprint per profile set, shared by every open event stream
        self._marks: dict[tuple[str, ...], tuple[float, tuple[str, dict[str, int]]]] = {}
        self._marks_lock = asyncio.Lock()
        #: live-update streams open now (the event loop is one thread: a plain counter)
        self.streams = 0

    # -- reading -------------------------------------------------------------------------------------

    def profile_of(self, request: Request, store: Store | None = None) -> str:
        """The path's profile, if this server shows it; NotFoundError otherwise (blocking). With a
        ``store``, that store must have it too; without, the page's own read refuses an unknown one."""
        name = str(request.path_params["profile"])
        scope = self.config.profiles
        if scope is not None and name not in scope:
            raise NotFoundError(f"profile {name!r} is not shown by this dashboard")
        if store is not None:
            store.get_profile(name)
        return name

    def profiles(self) -> tuple[str, ...]:
        if self.config.profiles is not None:
            return tuple(self.config.profiles)
        return tuple(p.name for p in self.reads.list_profiles())

    async def show(
        self,
        request: Request,
        session: Session,
        name: str,
        nav: str,
        read: Reader,
        *,
        checks: bool = False,
        files: bool = False,
    ) -> Response:
        """Read and render one page in one go: on the event loop for store reads that may run there
        (``Guards.read``), in ONE trip to a worker thread for file reads (``files``). ``checks``: the
        page's read refuses an unknown profile itself, so no separate read asks."""

        listed = await self.read(self.profiles) if files else None  # the reader stays on the loop

        def work() -> Response:
            shown = self.profiles() if listed is None else listed
            if "profile" in request.path_params:
                profile: str | None = self.profile_of(request, None if checks else self.reads)
            else:  # a page of no profile (sessions) keeps the nav of the one profile shown
                profile = shown[0] if len(shown) == 1 else None
            context = read(profile or "")
            context.setdefault("waiting", None)
            quoted = _quoted(profile) if profile is not None else ""
            return self.render(
                name,
                csrf=session.csrf,
                nav=nav,
                profiles=shown,
                live=True,
                profile=profile,
                pq=quoted,
                **context,
            )

        response: Response = await (self.work(work) if files else self.read(work))
        return response

    # -- pages ---------------------------------------------------------------------------------------

    async def home(self, request: Request, session: Session) -> Response:
        profiles = await self.read(self.profiles)
        if len(profiles) == 1:
            return RedirectResponse(f"/p/{quote(profiles[0], safe='')}/", status_code=303)
        now = self.config.clock()
        settings = self.config.settings

        def read(_: str) -> dict[str, Any]:
            return {"views": [pages.overview_page(self.reads, p, settings, now=now) for p in profiles]}

        return await self.show(request, session, "home.html", "home", read)

    async def overview(self, request: Request, session: Session) -> Response:
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            view = pages.overview_page(self.reads, profile, self.config.settings, now=now)
            return {"view": view, "waiting": view.waiting}

        return await self.show(request, session, "overview.html", "overview", read, checks=True)

    async def approvals(self, request: Request, session: Session) -> Response:
        after = _number(request.query_params.get("after", "0"))
        decided = request.query_params.get("decided")

        def read(profile: str) -> dict[str, Any]:
            view = proposals.approvals_page(
                self.reads, profile, after=after, decided=None if decided is None else _number(decided)
            )
            return {"view": view, "waiting": view.total}

        return await self.show(request, session, "approvals.html", "approvals", read)

    async def decide(self, request: Request, _session: Session) -> Response:
        """Record the person's decision, then show the next waiting card; a retry is safe."""
        intent_id = int(request.path_params["intent_id"])
        fields: dict[str, str] = request.state.form
        choice = fields.get("decision")
        if choice not in {"approve", "deny"}:
            return self.problem(request, 400, "The form must say approve or deny.")
        if fields.get("intent", str(intent_id)) != str(intent_id):
            return self.problem(request, 400, "The form names another intent than its address.")
        note = fields.get("note", "")
        now = self.config.clock()

        def work() -> str:
            profile = self.profile_of(request, self.store)
            proposals.decide(self.store, profile, intent_id, approve=choice == "approve", note=note, now=now)
            return profile

        profile = await self.work(work)
        return RedirectResponse(
            f"/p/{quote(profile, safe='')}/approvals?decided={intent_id}", status_code=303
        )

    async def reconcile(self, request: Request, _session: Session) -> Response:
        """The way back from a dead end (retry, done by hand, did not happen), as the CLI's
        ``intents retry|reconcile`` records it."""
        from tickloop.operator.service import reconcile_intent  # noqa: PLC0415

        intent_id = int(request.path_params["intent_id"])
        fields: dict[str, str] = request.state.form
        kind = {k.value: k for k in RECONCILE}.get(fields.get("reconcile", ""))
        if kind is None:
            return self.problem(request, 400, "The form must say retry, done_by_hand or did_not_happen.")
        note, now = fields.get("note", "").strip()[:2000], self.config.clock()

        def work() -> str:
            profile = self.profile_of(request, self.store)
            reconcile_intent(self.store, profile, intent_id, kind, by=proposals.decider(), note=note, now=now)
            return profile

        try:
            profile = await self.work(work)
        except ValidationError as exc:
            return self.problem(request, 400, exc.message)
        return RedirectResponse(f"/p/{quote(profile, safe='')}/intents/{intent_id}", status_code=303)

    async def board(self, request: Request, session: Session) -> Response:
        return await self.show(
            request,
            session,
            "board.html",
            "board",
            lambda profile: {"view": pages.board_page(self.reads, profile)},
        )

    async def timeline(self, request: Request, session: Session) -> Response:
        q = request.query_params
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            view = pages.timeline_page(
                self.reads, profile, now=now, kind=q.get("kind", ""), outcome=q.get("outcome", "")
            )
            return {"view": view}

        return await self.show(request, session, "timeline.html", "timeline", read)

    async def intents(self, request: Request, session: Session) -> Response:
        q = request.query_params

        def read(profile: str) -> dict[str, Any]:
            view = pages.intents_page(
                self.reads,
                profile,
                status=q.get("status", ""),
                action_type=q.get("type", ""),
                query=q.get("q", ""),
                before=_number(q.get("before", "")) or None,
            )
            return {"view": view}

        return await self.show(request, session, "intents.html", "intents", read)

    async def intent(self, request: Request, session: Session) -> Response:
        intent_id = int(request.path_params["intent_id"])
        return await self.show(
            request,
            session,
            "intent.html",
            "intents",
            lambda profile: {"view": proposals.intent_page(self.reads, profile, intent_id)},
        )

    async def attention(self, request: Request, session: Session) -> Response:
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            return {"view": pages.attention_page(self.reads, profile, self.config.settings, now=now)}

        return await self.show(request, session, "attention.html", "attention", read)

    async def sessions_list(self, request: Request, session: Session) -> Response:
        config = self.config
        return await self.show(
            request,
            session,
            "sessions.html",
            "sessions",
            lambda _: {"view": pages.sessions_page(config.sessions_dir, config.audit_dir)},
            files=True,
        )

    async def session_show(self, request: Request, session: Session) -> Response:
        config = self.config
        session_id = str(request.path_params["session_id"])

        def read(_: str) -> dict[str, Any]:
            try:
                return {"view": pages.session_page(config.sessions_dir, config.audit_dir, session_id)}
            except NotFoundError:
                raise
            except TickloopError as exc:
                raise NotFoundError(exc.message) from None

        return await self.show(request, session, "session.html", "sessions", read, files=True)

    # -- live updates --------------------------------------------------------------------------------

    async def fingerprint(self, profiles: Sequence[str]) -> tuple[str, dict[str, int]]:
        """The store's fingerprint, read at most once per half poll however many streams are open."""
        key = tuple(profiles)
        async with self._marks_lock:
            cached = self._marks.get(key)
            if cached is not None and time.monotonic() - cached[0] < self.config.poll_s / 2:
                return cached[1]
            value: tuple[str, dict[str, int]] = await self.read(pages.fingerprint, self.reads, profiles)
            self._marks[key] = (time.monotonic(), value)
            return value

    async def events(self, request: Request, session: Session) -> Response:
        """Server-Sent Events: ``hello`` at once, then ``change`` whenever the fingerprint moves.
        ``?once=1`` answers one JSON reading instead (the page's poll when streams are full);
        past ``max_streams`` open streams a new one gets 503 and the page falls back to that poll."""
        profiles = await self.read(self.profiles)
        if request.query_params.get("once"):
            mark, waiting = await self.fingerprint(profiles)
            return JSONResponse({"mark": mark, "waiting": waiting, "total": sum(waiting.values())})
        if self.streams >= self.config.max_streams:
            busy = Response("too many live-update streams; poll instead", status_code=503)
            busy.headers["retry-after"] = str(int(self.config.fallback_poll_s))
            return busy
        self.streams += 1
        return _Counted(self, self.stream(request, session, profiles))

    async def stream(self, request: Request, session: Session, profiles: Sequence[str]) -> AsyncIterator[str]:
        """One open stream's events, until the client leaves or the session ends."""
        last = ""
        quiet = 0.0
        while not await request.is_disconnected():
            if self.sessions.get(session.id, now=self.config.clock()) is None:
                return  # logged out or expired: the stream ends with the session
            mark, waiting = await self.fingerprint(profiles)
            if mark != last:
                kind = "hello" if not last else "change"
                last = mark
                quiet = 0.0
                data = json.dumps({"waiting": waiting, "total": sum(waiting.values())})
                yield f"event: {kind}\ndata: {data}\n\n"
            elif quiet >= 15:
                quiet = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(self.config.poll_s)
            quiet += self.config.poll_s


class _Counted(StreamingResponse):
    """An event stream that counts itself open until it ends, however it ends."""

    def __init__(self, board: Dashboard, events: AsyncIterator[str]) -> None:
        super().__init__(events, media_type="text/event-stream", headers={"x-accel-buffering": "no"})
        self.board = board

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.board.streams -= 1


@functools.lru_cache(maxsize=64)
def _quoted(profile: str) -> str:
    """The profile as a path segment, quoted once per name (every page's links carry it)."""
    return quote(profile, safe="")


def _number(text: str) -> int:
    """A query's id (``after``, ``decided``): digits within 64 bits, else 0."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else 0


def create_app(store: Store, config: WebConfig) -> tuple[ASGIApp, Dashboard]:
    """The ASGI app (security headers around the routes) and the dashboard behind it."""
    board = Dashboard(store, config)
    g = board.guarded
    profile = "/p/{profile}"
    pages = {
        "": g(board.overview),
        "approvals": g(board.approvals),
        "board": g(board.board),
        "timeline": g(board.timeline),
        "intents": g(board.intents),
        "attention": g(board.attention),
    }
    intent = g(board.intent)
    routes = [
        Route("/login", board.login_form, methods=["GET"]),
        Route("/login", board.login, methods=["POST"]),
        Route("/logout", g(board.logout), methods=["POST"]),
        Route("/", g(board.home), methods=["GET"]),
        *(Route(f"{profile}/{tail}", endpoint, methods=["GET"]) for tail, endpoint in pages.items()),
        Route(profile + "/intents/{intent_id:int}", intent, methods=["GET"]),
        Route(profile + "/intents/{intent_id:int}/decide", g(board.decide), methods=["POST"]),
        Route(profile + "/intents/{intent_id:int}/reconcile", g(board.reconcile), methods=["POST"]),
        Route("/sessions", g(board.sessions_list), methods=["GET"]),
        Route("/sessions/{session_id}", g(board.session_show), methods=["GET"]),
        Route("/events", g(board.events), methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = PageRoutes(Starlette(routes=routes), pages, intent)  # the same routes, found by a dict lookup
    return SecurityHeaders(BodyLimit(app)), board
