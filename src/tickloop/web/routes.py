"""The dashboard's GET pages found by one dict lookup, ahead of Starlette's router.

Starlette's router tries each route's regular expression in turn (the intent page is the tenth) inside
two exception middlewares; for a page of a few index reads that was a tenth of the request. A GET of
``/p/{profile}/``, ``/p/{profile}/<page>`` or ``/p/{profile}/intents/<digits>`` is answered here by
the very endpoint the router would call, with the same ``path_params``; every other request (any
other method, path or a ``root_path``) goes on to the router, which answers it as before (404, 405,
the trailing-slash redirect). The guards are the endpoint's own (``Guards.guarded``), so nothing is
skipped; an error that escapes an endpoint is answered 500 and re-raised, as Starlette's
``ServerErrorMiddleware`` does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]

#: ``Route("/p/{profile}/intents/{intent_id:int}")``: its ``int`` convertor is ``[0-9]+``
INTENT = "intents/"


class PageRoutes:
    """``app`` with the profile pages' GETs dispatched by their last path segment (``tail``)."""

    def __init__(self, app: ASGIApp, pages: dict[str, Endpoint], intent: Endpoint) -> None:
        self.app = app
        self.pages = pages  #: "" (the overview), "approvals", ... -> the endpoint
        self.intent = intent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.match(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        endpoint, params = found
        scope["path_params"] = params
        try:
            response = await endpoint(Request(scope, receive, send))
        except Exception:
            await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)
            raise
        await response(scope, receive, send)

    def match(self, scope: Scope) -> tuple[Endpoint, dict[str, object]] | None:
        """The endpoint and path parameters the router would find for this GET, or None."""
        path: str = scope["path"]
        if scope.get("root_path") or not path.startswith("/p/"):
            return None
        profile, slash, tail = path[3:].partition("/")
        if not profile or not slash:
            return None
        endpoint = self.pages.get(tail)
        if endpoint is not None:
            return endpoint, {"profile": profile}
        digits = tail[len(INTENT) :] if tail.startswith(INTENT) else ""
        if digits.isascii() and digits.isdigit():
            return self.intent, {"profile": profile, "intent_id": int(digits)}
        return None
