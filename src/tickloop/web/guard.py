"""The dashboard's guards and its login, below the pages (``tickloop.web.app``).

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

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickloop.config import Settings
from tickloop.errors import ConflictError, NotFoundError
from tickloop.inert import inert
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


class Guards:
    """The guards every route passes, the login that opens a session, and rendering."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.tokens = TokenStore(config.state_dir)
        self.sessions = Sessions()
        self.limit = RateLimit()
        self.env = _environment()

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


def _token() -> str:
    import secrets  # noqa: PLC0415

    return secrets.token_urlsafe(24)
