"""A page as its own two blocks (title and main) inside the frame every page shares, the frame kept.

Every page template extends ``base.html``: the head, the nav with its badge, the logout form and the
footer. Rendered through ``{% extends %}``, each page paid for that frame again (every nav link a
test and a yield through two generators), and for Jinja merging its globals into a fresh dict; on a
page of a few index reads that was as much as the reads. Here the page's ``title`` and ``main`` blocks
are rendered on their own, and the frame around them is rendered once per distinct value of what it
shows (``FRAME_KEYS``: the profile, the nav, the badge, the session's CSRF token, ...) and reused: the
same HTML, byte for byte, as the ``{% extends %}`` render (a test compares them for every page).

A page template may therefore hold nothing outside its blocks but the ``extends`` line: the macros
it calls are globals (``tickloop.web.cards``), not imported.

A page drawn wholly in Python (the intent page: ``cards.intent_blocks``) skips Jinja altogether: its
blocks come from its ``Drawn`` function and go into the same kept frame. Its template stays, as the
reference a test renders it against.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

import jinja2

from tickloop.web.kept import Lru

#: what base.html shows besides the two blocks: the frame's cache key (a test holds it to base.html)
FRAME_KEYS = (
    "live",
    "fallback_poll",
    "profile",
    "pq",
    "nav",
    "waiting",
    "csrf",
    "profiles",
)  # the key's order
_frame_key = itemgetter(*FRAME_KEYS)
#: a page drawn wholly in Python: its context -> its title and main blocks, the very text its template's
#: blocks render (a test compares them); its template stays the reference, and renders it in that test
Drawn = Callable[[Mapping[str, Any]], tuple[str, str]]
#: frames kept: one per page, profile, badge count and session, a few sessions at a time
FRAMES_KEPT = 256
_TITLE, _MAIN = "\x00title\x00", "\x00main\x00"  # no rendered frame holds a NUL otherwise
_FRAME = (
    '{% extends "base.html" %}{% block title %}' + _TITLE + "{% endblock %}"
    "{% block main %}" + _MAIN + "{% endblock %}"
)


class Pages:
    """Renders a page template as its blocks inside a kept frame; safe across worker threads."""

    def __init__(
        self, env: jinja2.Environment, drawn: Mapping[str, Drawn] | None = None, kept: int = FRAMES_KEPT
    ) -> None:
        self.env = env
        self.drawn = dict(drawn or {})
        self._frame = env.from_string(_FRAME)
        self._frames: Lru[tuple[str, str, str]] = Lru(kept)
        self._templates: dict[str, jinja2.Template] = {}
        self._globals: dict[str, Any] = {}

    def __call__(self, name: str, context: Mapping[str, Any]) -> str:
        """The page ``name`` for ``context`` (which must hold every one of ``FRAME_KEYS``)."""
        draw = self.drawn.get(name)
        title, main = draw(context) if draw is not None else self.blocks(name, context)
        head, middle, foot = self.frame(context)
        return f"{head}{title}{middle}{main}{foot}"

    def blocks(self, name: str, context: Mapping[str, Any]) -> tuple[str, str]:
        """The template ``name``'s title and main blocks, rendered on their own."""
        template = self._templates.get(name)
        if template is None:
            template = self._templates[name] = self.env.get_template(name)
            self._globals = dict(self.env.globals)  # the globals are all set before the first page
        # The context as Template.new_context(shared=True) makes it, less its copy of the globals into a
        # fresh dict and their names into a set (for imports with context, which no page makes).
        blocks = template.blocks
        ctx = self.env.context_class(self.env, {**self._globals, **context}, name, blocks)
        title = "".join(blocks["title"](ctx)) if "title" in blocks else "tickloop"
        main = "".join(blocks["main"](ctx))
        return title, main

    def frame(self, context: Mapping[str, Any]) -> tuple[str, str, str]:
        """base.html around the title and the main block, split at them: kept, least recently used out."""
        # The key is FRAME_KEYS itself (a test holds them to base.html); the profiles are a tuple.
        return self._frames.get(_frame_key(context), lambda: self._render_frame(context))

    def _render_frame(self, context: Mapping[str, Any]) -> tuple[str, str, str]:
        html = self._frame.render({k: context[k] for k in FRAME_KEYS})
        head, rest = html.split(_TITLE)
        middle, foot = rest.split(_MAIN)
        return head, middle, foot
