"""The dashboard's Starlette application: thin routes over ``tickloop.web.pages``, and its guards.

Every request passes the same guards, in this order:

1. **Host**: the Host header must be one the server was started for (a DNS-rebinding page gets 400).
2. **Session**: every page but ``/login`` and ``/static`` needs a live session; a GET without one is
   sent to ``/login``, anything else gets 403.
3. **POST only changes state**, and every POST must come from our own origin (``Origin``, and
   ``Sec-Fetch-Site`` when the browser sends it) and carry the session's CSRF token; else 403.

Every response carries a strict CSP (``default-src 'self'``: our one script and one stylesheet,
nothing inline, no frames), ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer`` and
``Cache-Control: no-store``. Templates autoescape, and untrusted text also passes ``inert`` so a
terminal escape sequence shows as text.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import anyio.to_thread
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickloop.config import Settings
from tickloop.errors import ConflictError, NotFoundError, TickloopError, ValidationError
from tickloop.inert import inert
from tickloop.operator.intents import RECONCILE
from tickloop.operator.store.base import Store
from tickloop.web import pages
from tickloop.web.auth import RateLimit, Session, Sessions, TokenStore, csrf_ok

HERE = Path(__file__).parent
SESSION_COOKIE = "tl_session"
PRE_COOKIE = "tl_pre"  #: the login form's CSRF token, before there is a session
MAX_FORM = 64 * 1024
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


@dataclass
class WebConfig:
    """What the server was started with."""

    settings: Settings
    profiles: list[str] | None  #: None: every profile in the store
    sessions_dir: Path
    audit_dir: Path
    state_dir: Path
    allowed_hosts: set[str]  #: Host header values accepted, e.g. ``127.0.0.1:8765``
    tls: bool = False
    poll_s: float = 1.0
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


class SecurityHeaders:
    """Adds the security headers to every HTTP response, streaming ones included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["inert"] = lambda v: inert("" if v is None else str(v))
    env.filters["line"] = lambda v: inert("" if v is None else str(v), keep_newlines=False)
    env.filters["when"] = lambda v: "" if v is None else f"{v.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    env.filters["json"] = lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)
    return env


Handler = Callable[[Request, Session], Awaitable[Response]]
#: a page's read: the profile ("" for pages without one) -> the template's context
Reader = Callable[[str], dict[str, Any]]


class Dashboard:
    """The routes and their guards, over one store."""

    def __init__(self, store: Store, config: WebConfig) -> None:
        self.store = store
        self.config = config
        self.tokens = TokenStore(config.state_dir)
        self.sessions = Sessions()
        self.limit = RateLimit()
        self.env = _environment()
        #: the newest fingerprint per profile set, shared by every open event stream
        self._marks: dict[tuple[str, ...], tuple[float, tuple[str, dict[str, int]]]] = {}
        self._marks_lock = asyncio.Lock()

    # -- plumbing ------------------------------------------------------------------------------------

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking store call off the event loop."""
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    def render(self, name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        base: dict[str, Any] = {
            "csrf": "",
            "profile": None,
            "pq": "",
            "profiles": [],
            "nav": "",
            "waiting": None,
            "live": False,
        }
        html = self.env.get_template(name).render({**base, **context, "path": request.url.path})
        return HTMLResponse(html, status_code=status)

    def problem(self, request: Request, status: int, message: str) -> HTMLResponse:
        return self.render("problem.html", request, status=status, status_code=status, message=message)

    def host_ok(self, request: Request) -> bool:
        return request.headers.get("host", "") in self.config.allowed_hosts

    def origin_ok(self, request: Request) -> bool:
        """A POST from our own page. Browsers say where it came from in ``Sec-Fetch-Site`` and
        ``Origin``; under ``Referrer-Policy: no-referrer`` a form POST's Origin is ``null``, so then
        the fetch metadata must say ``same-origin``. A client that sends neither (curl) is not a
        browser that another site can drive, and still needs the CSRF token."""
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in {"same-origin", "none"}:
            return False
        origin = request.headers.get("origin")
        if origin is None:
            return True
        if origin == "null":
            return site == "same-origin"
        scheme = "https" if self.config.tls else "http"
        return origin == f"{scheme}://{request.headers.get('host', '')}"

    async def form(self, request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM:
            return {}
        parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}

    async def refusal(self, request: Request, session: Session | None) -> Response | None:
        """Why this request may not proceed (host, session, origin, CSRF), or None."""
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        if session is None and request.method == "GET":
            return RedirectResponse("/login", status_code=303)
        if session is None:
            return self.problem(request, 403, "You are not logged in.")
        if request.method != "POST":
            return None
        fields = await self.form(request)
        if not self.origin_ok(request) or not csrf_ok(session.csrf, fields.get("csrf")):
            why = "came from another site" if not self.origin_ok(request) else "has no valid CSRF token"
            return self.problem(request, 403, f"Refused: the request {why}.")
        request.state.form = fields
        return None

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = self.sessions.get(request.cookies.get(SESSION_COOKIE), now=self.config.clock())
            refused = await self.refusal(request, session)
            if refused is not None or session is None:
                return refused or self.problem(request, 403, "You are not logged in.")
            try:
                return await handler(request, session)
            except NotFoundError as exc:
                return self.problem(request, 404, exc.message)
            except ConflictError as exc:
                return self.problem(request, 409, exc.message)

        return endpoint

    def profile_of(self, request: Request) -> str:
        """The path's profile, if this server shows it; NotFoundError otherwise (blocking)."""
        name = str(request.path_params["profile"])
        scope = self.config.profiles
        if scope is not None and name not in scope:
            raise NotFoundError(f"profile {name!r} is not shown by this dashboard")
        self.store.get_profile(name)
        return name

    def profiles(self) -> list[str]:
        if self.config.profiles is not None:
            return list(self.config.profiles)
        return [p.name for p in self.store.list_profiles()]

    async def show(self, request: Request, session: Session, name: str, nav: str, read: Reader) -> Response:
        """Read and render one page in ONE trip to a worker thread (store reads block; so does Jinja)."""

        def work() -> Response:
            shown = self.profiles()
            if "profile" in request.path_params:
                profile: str | None = self.profile_of(request)
            else:  # a page of no profile (sessions) keeps the nav of the one profile shown
                profile = shown[0] if len(shown) == 1 else None
            context = read(profile or "")
            context.setdefault("waiting", None)
            quoted = quote(profile, safe="") if profile is not None else ""
            return self.render(
                name,
                request,
                csrf=session.csrf,
                nav=nav,
                profiles=shown,
                live=True,
                profile=profile,
                pq=quoted,
                **context,
            )

        response: Response = await anyio.to_thread.run_sync(work)
        return response

    # -- login ---------------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        pre = request.cookies.get(PRE_COOKIE) or _token()
        response = self.render("login.html", request, token=request.query_params.get("token", ""), pre=pre)
        response.set_cookie(
            PRE_COOKIE,
            pre,
            max_age=600,
            httponly=True,
            samesite="strict",
            secure=self.config.tls,
            path="/login",
        )
        return response

    async def login(self, request: Request) -> Response:
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        now = self.config.clock()
        client = request.client.host if request.client else "?"
        wait = self.limit.blocked(client, now=now)
        if wait is not None:
            slow = self.problem(request, 429, "Too many failed logins. Wait, then try again.")
            slow.headers["retry-after"] = str(max(1, int(wait.total_seconds())))
            return slow
        if not self.origin_ok(request):
            return self.problem(request, 403, "Refused: the request came from another site.")
        fields = await self.form(request)
        if not csrf_ok(request.cookies.get(PRE_COOKIE, ""), fields.get("csrf")):
            return self.problem(request, 403, "Refused: the form's CSRF token is missing or wrong.")
        token = fields.get("token", "").strip()
        if not token or not await self.read(self.tokens.consume, token, now=now):
            self.limit.failed(client, now=now)
            return self.problem(request, 403, "That login token is wrong, used or expired.")
        session = self.sessions.start(now=now)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            session.id,
            max_age=int(self.sessions.ttl.total_seconds()),
            httponly=True,
            samesite="strict",
            secure=self.config.tls,
            path="/",
        )
        response.delete_cookie(PRE_COOKIE, path="/login")
        return response

    async def logout(self, _request: Request, session: Session) -> Response:
        self.sessions.end(session.id)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # -- pages ---------------------------------------------------------------------------------------

    async def home(self, request: Request, session: Session) -> Response:
        profiles = await self.read(self.profiles)
        if len(profiles) == 1:
            return RedirectResponse(f"/p/{quote(profiles[0], safe='')}/", status_code=303)
        now = self.config.clock()
        settings = self.config.settings

        def read(_: str) -> dict[str, Any]:
            return {"views": [pages.overview_page(self.store, p, settings, now=now) for p in profiles]}

        return await self.show(request, session, "home.html", "home", read)

    async def overview(self, request: Request, session: Session) -> Response:
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            view = pages.overview_page(self.store, profile, self.config.settings, now=now)
            return {"view": view, "waiting": view.waiting}

        return await self.show(request, session, "overview.html", "overview", read)

    async def approvals(self, request: Request, session: Session) -> Response:
        def read(profile: str) -> dict[str, Any]:
            view = pages.approvals_page(self.store, profile)
            return {"view": view, "waiting": view.total}

        return await self.show(request, session, "approvals.html", "approvals", read)

    async def decide(self, request: Request, _session: Session) -> Response:
        intent_id = int(request.path_params["intent_id"])
        fields: dict[str, str] = request.state.form
        choice = fields.get("decision")
        if choice not in {"approve", "deny"}:
            return self.problem(request, 400, "The form must say approve or deny.")
        approve = choice == "approve"
        note = fields.get("note", "")
        now = self.config.clock()

        def work() -> str:
            profile = self.profile_of(request)
            pages.decide(self.store, profile, intent_id, approve=approve, note=note, now=now)
            return profile

        profile = await anyio.to_thread.run_sync(work)
        return RedirectResponse(f"/p/{quote(profile, safe='')}/intents/{intent_id}", status_code=303)

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
            profile = self.profile_of(request)
            reconcile_intent(self.store, profile, intent_id, kind, by=pages.decider(), note=note, now=now)
            return profile

        try:
            profile = await anyio.to_thread.run_sync(work)
        except ValidationError as exc:
            return self.problem(request, 400, exc.message)
        return RedirectResponse(f"/p/{quote(profile, safe='')}/intents/{intent_id}", status_code=303)

    async def board(self, request: Request, session: Session) -> Response:
        return await self.show(
            request,
            session,
            "board.html",
            "board",
            lambda profile: {"view": pages.board_page(self.store, profile)},
        )

    async def timeline(self, request: Request, session: Session) -> Response:
        q = request.query_params
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            view = pages.timeline_page(
                self.store, profile, now=now, kind=q.get("kind", ""), outcome=q.get("outcome", "")
            )
            return {"view": view}

        return await self.show(request, session, "timeline.html", "timeline", read)

    async def intents(self, request: Request, session: Session) -> Response:
        q = request.query_params

        def read(profile: str) -> dict[str, Any]:
            view = pages.intents_page(
                self.store,
                profile,
                status=q.get("status", ""),
                action_type=q.get("type", ""),
                query=q.get("q", ""),
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
            lambda profile: {"view": pages.intent_page(self.store, profile, intent_id)},
        )

    async def attention(self, request: Request, session: Session) -> Response:
        now = self.config.clock()

        def read(profile: str) -> dict[str, Any]:
            return {"view": pages.attention_page(self.store, profile, self.config.settings, now=now)}

        return await self.show(request, session, "attention.html", "attention", read)

    async def sessions_list(self, request: Request, session: Session) -> Response:
        config = self.config
        return await self.show(
            request,
            session,
            "sessions.html",
            "sessions",
            lambda _: {"view": pages.sessions_page(config.sessions_dir, config.audit_dir)},
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

        return await self.show(request, session, "session.html", "sessions", read)

    # -- live updates --------------------------------------------------------------------------------

    async def fingerprint(self, profiles: list[str]) -> tuple[str, dict[str, int]]:
        """The store's fingerprint, read at most once per half poll however many streams are open."""
        key = tuple(profiles)
        async with self._marks_lock:
            cached = self._marks.get(key)
            if cached is not None and time.monotonic() - cached[0] < self.config.poll_s / 2:
                return cached[1]
            value: tuple[str, dict[str, int]] = await self.read(pages.fingerprint, self.store, profiles)
            self._marks[key] = (time.monotonic(), value)
            return value

    async def events(self, request: Request, session: Session) -> Response:
        """Server-Sent Events: ``hello`` at once, then ``change`` whenever the fingerprint moves."""
        profiles = await self.read(self.profiles)

        async def stream() -> AsyncIterator[str]:
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

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )


def _token() -> str:
    import secrets  # noqa: PLC0415

    return secrets.token_urlsafe(24)


def create_app(store: Store, config: WebConfig) -> tuple[ASGIApp, Dashboard]:
    """The ASGI app (security headers around the routes) and the dashboard behind it."""
    board = Dashboard(store, config)
    g = board.guarded
    profile = "/p/{profile}"
    routes = [
        Route("/login", board.login_form, methods=["GET"]),
        Route("/login", board.login, methods=["POST"]),
        Route("/logout", g(board.logout), methods=["POST"]),
        Route("/", g(board.home), methods=["GET"]),
        Route(profile + "/", g(board.overview), methods=["GET"]),
        Route(profile + "/approvals", g(board.approvals), methods=["GET"]),
        Route(profile + "/board", g(board.board), methods=["GET"]),
        Route(profile + "/timeline", g(board.timeline), methods=["GET"]),
        Route(profile + "/intents", g(board.intents), methods=["GET"]),
        Route(profile + "/intents/{intent_id:int}", g(board.intent), methods=["GET"]),
        Route(profile + "/intents/{intent_id:int}/decide", g(board.decide), methods=["POST"]),
        Route(profile + "/intents/{intent_id:int}/reconcile", g(board.reconcile), methods=["POST"]),
        Route(profile + "/attention", g(board.attention), methods=["GET"]),
        Route("/sessions", g(board.sessions_list), methods=["GET"]),
        Route("/sessions/{session_id}", g(board.session_show), methods=["GET"]),
        Route("/events", g(board.events), methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    return SecurityHeaders(app), board
