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

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, quote

import anyio.to_thread
import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickloop.config import Settings
from tickloop.errors import ConflictError, NotFoundError, StoreBusyError, ValidationError
from tickloop.inert import inert
from tickloop.web import cards, rows
from tickloop.web.auth import RateLimit, Session, Sessions, TokenStore, csrf_ok
from tickloop.web.fragments import CardCache
from tickloop.web.frame import Pages
from tickloop.web.kept import Kept

HERE = Path(__file__).parent
SESSION_COOKIE = "tl_session"
PRE_COOKIE = "tl_pre"  #: the login form's CSRF token, before there is a session
NEXT_COOKIE = "tl_next"  #: where a browser sent to log in was going
MAX_FORM = 64 * 1024  #: the largest request body any route accepts
MAX_FIELDS = 50  #: form fields at most (ours have four)
MAX_NEXT = 2000  #: the longest deep link kept across login
ATTENTION_KEPT = 8  #: attention lists kept drawn (up to 1,000 rows, ~200 KB each): one per profile shown
MALFORMED = "Refused: the form is malformed (a NUL character, or more fields than ours)."
LOCKED_PAUSE_S = 1.0  #: how long a client past the failed-login limit waits for each answer
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
    public_origin: str = ""  #: the Origin of ``--public-url`` (a proxy's https:// in front of us)
    secure_cookies: bool = False  #: the browser reaches us over TLS (ours, or a proxy's)
    store_timeout_s: float = 3.0  #: a store call from a page gives up after this long
    poll_s: float = 1.0
    max_streams: int = 32  #: open live-update streams at most; past it a page polls every ``fallback_poll_s``
    fallback_poll_s: float = 10.0
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
        auto_reload=False,  # templates ship in the package: no stat() of each on every page
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["inert"] = lambda v: inert("" if v is None else str(v))
    env.filters["line"] = lambda v: inert("" if v is None else str(v), keep_newlines=False)
    env.filters["when"] = rows.when
    env.filters["json"] = lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)
    env.globals.update(proposal=cards.proposal, decide_form=cards.decide_form, intent_main=cards.intent_main)
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
        self.env.globals["approval_cards"] = CardCache(self.env)
        # the long lists, drawn in Python (``tickloop.web.rows``: every store value escaped)
        for draw in (rows.progress_rows, rows.task_items, rows.plan_items):
            self.env.globals[draw.__name__] = draw
        # the attention records change only when the gate decides, the page is fetched at every tick
        self.env.globals["attention_rows"] = Kept(rows.attention_rows, ATTENTION_KEPT)
        self.pages = Pages(self.env, {"intent.html": cards.intent_blocks})
        self.reads_inline = False  #: ``read`` runs on the event loop (the store gave a loop reader)

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A page's store reads. On the event loop when the store gave a loop reader (SQLite: a read
        takes well under a millisecond, a trip to a thread as long again), bounded by the reader's own
        deadline; else in a worker thread, as ``work``. Either way ``StoreSlow`` past the timeout."""
        if not self.reads_inline:
            return await self.work(fn, *args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except StoreBusyError:
            raise StoreSlow(self.config.store_timeout_s) from None

    async def work(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run blocking work (a write, a file read) off the event loop, for at most ``store_timeout_s``:
        past it the call is abandoned (its thread finishes on its own) and ``StoreSlow`` says so."""
        try:
            with anyio.fail_after(self.config.store_timeout_s):
                return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs), abandon_on_cancel=True)
        except TimeoutError:
            raise StoreSlow(self.config.store_timeout_s) from None

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        base: dict[str, Any] = {
            "csrf": "",
            "profile": None,
            "pq": "",
            "profiles": (),
            "nav": "",
            "waiting": None,
            "live": False,
            "fallback_poll": int(self.config.fallback_poll_s),
        }
        return HTMLResponse(self.pages(name, {**base, **context}), status_code=status)

    def problem(self, _request: Request, status: int, message: str) -> HTMLResponse:
        return self.render("problem.html", status=status, status_code=status, message=message)

    def host_ok(self, request: Request) -> bool:
        return request.headers.get("host", "").lower() in self.config.allowed_hosts

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
        own = f"{scheme}://{request.headers.get('host', '')}"
        return origin in {own, self.config.public_origin} and origin != ""

    async def form(self, request: Request) -> dict[str, str] | None:
        """The urlencoded form (``BodyLimit`` already bounded it), the first value of each field;
        None for a form that is not one (too many fields, a NUL anywhere)."""
        text = (await request.body()).decode("utf-8", "replace")
        try:
            parsed = parse_qs(text, keep_blank_values=True, max_num_fields=MAX_FIELDS)
        except ValueError:
            return None
        fields = {k: v[0] for k, v in parsed.items()}
        return None if any("\x00" in k or "\x00" in v for k, v in fields.items()) else fields

    async def refusal(self, request: Request, session: Session | None) -> Response | None:
        """Why this request may not proceed (host, session, origin, CSRF), or None."""
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        if session is None and request.method == "GET":
            return self.to_login(request)
        if session is None:
            return self.problem(request, 403, "You are not logged in.")
        return None if request.method != "POST" else await self.post_refusal(request, session)

    async def post_refusal(self, request: Request, session: Session) -> Response | None:
        """Why this POST may not proceed (origin, malformed form, CSRF), or None; keeps the form."""
        if not self.origin_ok(request):
            return self.problem(request, 403, "Refused: the request came from another site.")
        fields = await self.form(request)
        if fields is None:
            return self.problem(request, 400, MALFORMED)
        if not csrf_ok(session.csrf, fields.get("csrf")):
            return self.problem(request, 403, "Refused: the request has no valid CSRF token.")
        request.state.form = fields
        return None

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = self.sessions.get(request.cookies.get(SESSION_COOKIE), now=self.config.clock())
            refused = await self.refusal(request, session)
            if refused is not None or session is None:
                return refused or self.problem(request, 403, "You are not logged in.")
            return await self.answer(handler, request, session)

        return endpoint

    async def answer(self, handler: Handler, request: Request, session: Session) -> Response:
        """The handler's response, or a page that says in words what went wrong (never a bare 500)."""
        try:
            return await handler(request, session)
        except (NotFoundError, ConflictError, ValidationError) as exc:
            status = 404 if isinstance(exc, NotFoundError) else 409 if isinstance(exc, ConflictError) else 400
            return self.problem(request, status, exc.message if status != 400 else f"Refused: {exc.message}")
        except StoreSlow as exc:
            return self.unavailable(request, f"The store did not answer within {exc.seconds:g} s.")
        except Exception as exc:  # noqa: BLE001  (a store that is down: say so, and log the cause)
            traceback.print_exception(exc, file=sys.stderr)
            return self.unavailable(request, f"The store failed: {type(exc).__name__}.")

    def unavailable(self, request: Request, why: str) -> Response:
        what = "Not recorded — try again" if request.method == "POST" else "Nothing to show — try again"
        response = self.problem(request, 503, f"{why} {what}; a retry never records a decision twice.")
        response.headers["retry-after"] = "3"
        return response

    def to_login(self, request: Request) -> Response:
        """Send a browser without a session to the login form, keeping where it was going."""
        response = RedirectResponse("/login", status_code=303)
        wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if safe_next(wanted) and wanted != "/":
            response = RedirectResponse(f"/login?next={quote(wanted, safe='')}", status_code=303)
            self._login_cookie(response, NEXT_COOKIE, wanted, samesite="lax")
        return response

    def _login_cookie(
        self, response: Response, name: str, value: str, *, samesite: Literal["lax", "strict"]
    ) -> None:
        """A short-lived cookie only the login form reads (its CSRF token, or where to go after it)."""
        response.set_cookie(
            name,
            value,
            max_age=600,
            httponly=True,
            samesite=samesite,
            secure=self.config.tls or self.config.secure_cookies,
            path="/login",
        )

    # -- login ---------------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        pre = request.cookies.get(PRE_COOKIE) or _token()
        wanted = request.query_params.get("next", "")
        response = self.render(
            "login.html",
            token=request.query_params.get("token", ""),
            pre=pre,
            next=wanted if safe_next(wanted) else "",
        )
        self._login_cookie(response, PRE_COOKIE, pre, samesite="strict")
        return response

    async def login(self, request: Request) -> Response:
        """A correct token always opens a session, however many guesses failed before it (the token
        has 256 bits); failures only earn the guesser a 429 and a pause."""
        fields = await self.login_form_fields(request)
        if isinstance(fields, Response):
            return fields
        now = self.config.clock()
        client = request.client.host if request.client else "?"
        token = fields.get("token", "").strip()
        if token and await self.work(self.tokens.consume, token, now=now):
            return self.logged_in(request, fields, now=now)
        wait = self.limit.blocked(client, now=now)
        self.limit.failed(client, now=now)
        if wait is None:
            return self.problem(request, 403, "That login token is wrong, used or expired.")
        await asyncio.sleep(LOCKED_PAUSE_S)
        slow = self.problem(request, 429, "Too many failed logins from here. Wait, then try again.")
        slow.headers["retry-after"] = str(max(1, int(wait.total_seconds())))
        return slow

    async def login_form_fields(self, request: Request) -> dict[str, str] | Response:
        """The login form's fields, or why it is refused (host, origin, malformed, CSRF)."""
        if not self.host_ok(request):
            return Response("unknown host", status_code=400)
        if not self.origin_ok(request):
            return self.problem(request, 403, "Refused: the request came from another site.")
        fields = await self.form(request)
        if fields is None:
            return self.problem(request, 400, MALFORMED)
        if not csrf_ok(request.cookies.get(PRE_COOKIE, ""), fields.get("csrf")):
            return self.problem(request, 403, "Refused: the form's CSRF token is missing or wrong.")
        return fields

    def logged_in(self, request: Request, fields: dict[str, str], *, now: datetime) -> Response:
        """The new session's cookie, and on to where the browser was going (a path of ours only)."""
        wanted = fields.get("next") or request.cookies.get(NEXT_COOKIE, "")
        session = self.sessions.start(now=now)
        response = RedirectResponse(wanted if safe_next(wanted) else "/", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            session.id,
            max_age=int(self.sessions.ttl.total_seconds()),
            httponly=True,
            samesite="strict",
            secure=self.config.tls or self.config.secure_cookies,
            path="/",
        )
        response.delete_cookie(PRE_COOKIE, path="/login")
        response.delete_cookie(NEXT_COOKIE, path="/login")
        return response

    async def logout(self, _request: Request, session: Session) -> Response:
        self.sessions.end(session.id)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response


def safe_next(path: str) -> bool:
    """A place of ours to go after login: a local path, never another site (``//host``, ``/\\host``)."""
    return (
        path.startswith("/")
        and not path.startswith(("//", "/\\"))
        and len(path) <= MAX_NEXT
        and all(" " < c < "\x7f" for c in path)
        and not path.startswith(("/login", "/logout", "/events", "/static"))
    )


class StoreSlow(Exception):  # noqa: N818  (a condition, not a bug)
    """The store did not answer in time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the store did not answer within {seconds:g} s")
        self.seconds = seconds


class BodyLimit:
    """Refuses a request body over ``limit`` bytes before reading it (a declared length) or as soon
    as it passes the limit (a chunked one), on every route: memory stays bounded whoever asks."""

    def __init__(self, app: ASGIApp, limit: int = MAX_FORM) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self.refuse(scope, receive, send)
            return
        body = await self.take(receive)
        if body is None:
            await self.refuse(scope, receive, send)
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def take(self, receive: Receive) -> bytes | None:
        """The whole body, or None once it passes the limit (or the client leaves)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        text = f"Refused: the request body is larger than {self.limit // 1024} KiB."
        await Response(text, status_code=413, headers={"connection": "close"})(scope, receive, send)


def _token() -> str:
    import secrets  # noqa: PLC0415

    return secrets.token_urlsafe(24)
