"""What ``tickloop.web.cards`` draws in Python is exactly what the templates it replaced drew (the
proposal and decide-form macros of ``_card.html``, the intent page's main block), for any text the store
may hold; the frame kept by ``tickloop.web.frame`` is exactly the ``{% extends %}`` render; and the GET
pages found by ``tickloop.web.routes`` answer as Starlette's router alone answers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.config import Settings
from tickloop.operator import gate, staging
from tickloop.operator.domain import (
    Decision,
    DecisionKind,
    Intent,
    IntentOrigin,
    IntentStatus,
    Notification,
    Observation,
    Outcome,
    ProgressRow,
    Tier,
    Verdict,
)
from tickloop.operator.store import open_store
from tickloop.web import cards, proposals, rows
from tickloop.web.app import SESSION_COOKIE, create_app
from tickloop.web.frame import FRAME_KEYS
from tickloop.web.guard import HERE, SecurityHeaders, WebConfig, _environment
from tickloop.web.kept import Kept

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOST = "127.0.0.1:8765"
#: the macros cards.proposal and cards.decide_form replaced, as _card.html held them
OLD_CARD = r"""{# The parts of a waiting intent's card, shared by the approvals page and the intent page. #}
{% macro proposal(p) %}
<div class="proposal">
  <dl class="mail">
  {% for name, text in p.headers %}
    <dt>{{ name }}</dt><dd>{% if text is none %}&mdash;{% else %}{{ text | line }}{% endif %}</dd>
  {% endfor %}
  </dl>
  {% if p.body is not none %}<div class="mail-body">{{ p.body | inert }}</div>{% endif %}
  {% if p.rest %}
  <details><summary>Other fields</summary>
  <dl>
  {% for key, value in p.rest | dictsort %}
    <dt>{{ key | line }}</dt><dd>{% if value is string %}<span class="text">{{ value | inert }}</span>{% else %}<code>{{ value | json | inert }}</code>{% endif %}</dd>
  {% endfor %}
  </dl>
  </details>
  {% endif %}
</div>
{% endmacro %}

{% macro decide_form(i, label, csrf, pq, note_id) %}
<form method="post" action="/p/{{ pq }}/intents/{{ i.id }}/decide" class="decide" data-intent="{{ i.id }}">
  <input type="hidden" name="csrf" value="{{ csrf }}">
  <input type="hidden" name="intent" value="{{ i.id }}">
  <label for="{{ note_id }}">Note (optional)</label>
  <textarea id="{{ note_id }}" name="note" rows="2" maxlength="2000"></textarea>
  <div class="buttons">
    <button type="submit" name="decision" value="approve" class="primary" data-intent="{{ i.id }}"><span class="verb">Approve #{{ i.id }}</span> <span class="what">&middot; {{ label | line }}</span></button>
    <button type="submit" name="decision" value="deny" class="danger" data-intent="{{ i.id }}"><span class="verb">Deny #{{ i.id }}</span> <span class="what">&middot; {{ label | line }}</span></button>
  </div>
</form>
{% endmacro %}
"""  # noqa: E501
#: the intent page's main block that cards.intent_main replaced, as intent.html held it
OLD_MAIN = r"""{% set i = view.intent %}
<h1>#{{ i.id }} {{ i.title | line }}</h1>
<p>Status: <strong class="st st-{{ i.status.value }}" id="intent-status">{{ i.status.value }}</strong> &middot; <span class="tag">{{ i.action_type | line }}</span> ({{ i.tier.value }}){% if i.recipient %} to {{ i.recipient | line }}{% endif %} &middot; from <span id="intent-origin">{{ i.origin.tick_kind | line }}</span>{% if i.origin.tainted %} &middot; <strong class="warn">tainted</strong>{% endif %}{% if i.result and i.result.dry_run is sameas true and i.result.preview is mapping %} &middot; <span class="tag" id="intent-dry-run">dry-run: would be {{ i.result.preview.would | line }}</span>{% elif i.dry_run and i.status.value in ("sent", "completed") %} &middot; <span class="tag" id="intent-dry-run">dry-run</span>{% endif %}</p>
<h2>Life</h2>
<ol class="life">
{% for e in view.life %}
  <li><span class="st st-{{ e.state }}">{{ e.state }}</span> <span class="muted">{{ e.at | when }}</span> {{ e.text | line }}</li>
{% endfor %}
</ol>
<h2>Proposal</h2>
{{ proposal(view.card.proposal) }}
{% if view.card.fed_by %}
<p>Fed by:</p>
<ul class="plain">{% for o in view.card.fed_by %}<li><span class="tag">{{ o.source | line }}</span> {{ (o.payload.get('subject') or o.payload.get('title') or o.payload.get('summary') or '') | line }}</li>{% endfor %}</ul>
{% endif %}
{% if view.waiting %}
<div class="card approval" data-card="{{ i.id }}">{{ decide_form(i, view.card.label, csrf, pq, 'note') }}</div>
{% endif %}
{% if i.status.value in ("failed", "needs_human") %}
<form method="post" action="/p/{{ pq }}/intents/{{ i.id }}/reconcile" class="decide card" id="reconcile">
  <input type="hidden" name="csrf" value="{{ csrf }}">
  <label for="reconcile-note">What changed, or what you found (a retry needs it)</label>
  <textarea id="reconcile-note" name="note" rows="2" maxlength="2000"></textarea>
  <div class="buttons">
    <button type="submit" name="reconcile" value="retry" class="primary">Retry</button>
{% if i.status.value == "needs_human" %}
    <button type="submit" name="reconcile" value="done_by_hand">Done by hand</button>
    <button type="submit" name="reconcile" value="did_not_happen">Did not happen</button>
{% endif %}
  </div>
</form>
{% endif %}
{% if i.result %}<details open><summary>Result</summary><pre>{{ i.result | json | inert }}</pre></details>{% endif %}
<h2>Log lines</h2>
<ul class="log">
{% for n in view.log %}
  <li><span class="muted">{{ n.sent_at | when }}</span> <span class="tag">{{ n.channel | line }}/{{ n.kind | line }}</span> {{ n.subject | line }}{% if n.body %}<pre>{{ n.body | inert }}</pre>{% endif %}</li>
{% else %}
  <li class="muted">No log lines name this intent.</li>
{% endfor %}
</ul>
<h2>Progress rows</h2>
<ul class="log">
{% for r in view.rows %}
  <li><span class="muted">{{ r.started_at | when }}</span> {{ r.tick_kind | line }} <span class="o o-{{ r.outcome.value }}">{{ r.outcome.value }}</span> {{ r.detail | line }} {{ r.error | line }}</li>
{% else %}
  <li class="muted">None.</li>
{% endfor %}
</ul>
"""  # noqa: E501
HOSTILE = [
    "<script>alert(1)</script>",
    '" onmouseover="x',
    "a & b's",
    "\x1b]0;t\x07x",
    "\u202eevil",
    "two\nlines",
    "",
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20))
values = st.one_of(texts, st.integers(), st.lists(st.integers(), max_size=2), st.booleans(), st.none())
ENV = _environment()
MACROS: Any = ENV.from_string(OLD_CARD).module
OLD_INTENT = ENV.from_string(
    OLD_MAIN, globals={"proposal": MACROS.proposal, "decide_form": MACROS.decide_form}
)


@st.composite
def intents(draw: st.DrawFn) -> Intent:
    result = draw(
        st.one_of(
            st.none(),
            st.dictionaries(texts, values, max_size=2),
            st.builds(lambda w: {"dry_run": True, "preview": {"would": w}}, texts),
        )
    )
    return Intent(
        draw(st.integers(1, 10**6)), "p", draw(texts), draw(texts), draw(texts),
        draw(st.dictionaries(texts, values, max_size=3)), draw(st.sampled_from(list(Tier))),
        draw(st.sampled_from(list(IntentStatus))), draw(st.one_of(st.none(), st.sampled_from(list(Verdict)))),
        tuple(draw(st.lists(texts, max_size=2))), None, draw(st.one_of(st.none(), texts)),
        draw(st.one_of(st.none(), st.just(NOW))), None, draw(st.booleans()), result, False,
        IntentOrigin(draw(texts), draw(st.booleans())), NOW - timedelta(hours=1), NOW,
    )  # fmt: skip


@st.composite
def intent_pages(draw: st.DrawFn) -> proposals.IntentPage:
    intent = draw(intents())
    kind = draw(st.one_of(st.none(), st.sampled_from(list(DecisionKind))))
    decision = None if kind is None else Decision(1, "p", intent.id, kind, draw(texts), draw(texts), NOW)
    lines = draw(st.lists(st.tuples(texts, texts, texts, texts), max_size=3))
    log = [
        Notification(n, "p", channel, kind, subject, body, intent.id, NOW - timedelta(minutes=n))
        for n, (channel, kind, subject, body) in enumerate(lines)
    ]
    trail = draw(st.lists(st.tuples(texts, st.sampled_from(list(Outcome)), texts, texts), max_size=3))
    rows = [
        ProgressRow(n, "p", kind, outcome, "", intent.id, error, detail, NOW, NOW)
        for n, (kind, outcome, error, detail) in enumerate(trail)
    ]
    said = st.dictionaries(st.sampled_from(["subject", "title", "summary", "x"]), values, max_size=2)
    fed = [
        Observation(n, "p", source, "h", False, payload, NOW)
        for n, (source, payload) in enumerate(draw(st.lists(st.tuples(texts, said), max_size=2)))
    ]
    waiting = intent.status is IntentStatus.REQUIRES_APPROVAL
    card = proposals.Waiting(intent, None, fed)
    return proposals.IntentPage(intent, proposals.life(intent, decision), decision, log, rows, waiting, card)


@settings(max_examples=150, deadline=None)
@given(intent_pages(), st.sampled_from(["tok-1", "a&b"]), st.sampled_from(["r", "a%20b", "%3Cx%3E"]))
def test_the_intent_page_is_what_its_template_drew(view: proposals.IntentPage, csrf: str, pq: str) -> None:
    drawn = OLD_INTENT.render(view=view, csrf=csrf, pq=pq) + "\n"  # a template source drops its last newline
    assert str(cards.intent_main(view, csrf, pq)) == drawn
    # The page as served, its main block kept: examples share ids and times with other contents, so
    # a key that missed any field the page shows would hand back another example's page here.
    title, main = cards.intent_blocks({"view": view, "csrf": csrf, "pq": pq})
    assert (title, str(main)) == (f"Intent #{view.intent.id}", drawn)


@settings(max_examples=100, deadline=None)
@given(intents(), texts, st.sampled_from(["note", "note-7", "<n>"]))
def test_a_proposal_and_its_decide_form_are_what_the_macros_drew(
    intent: Intent, label: str, note: str
) -> None:
    p = proposals.proposal(intent)
    assert str(cards.proposal(p)) == str(MACROS.proposal(p))
    drawn = cards.decide_form(intent, label, "tok", "a%20b", note)
    assert str(drawn) == str(MACROS.decide_form(intent, label, "tok", "a%20b", note))


@settings(max_examples=30, deadline=None)
@given(intent_pages())
def test_a_kept_page_is_drawn_once_per_content_and_again_when_anything_it_shows_moved(
    view: proposals.IntentPage,
) -> None:
    """Kept per digest of every field: the same content is drawn once; a preview recorded without
    moving ``updated_at`` (as the executor's dry pass does), a new log line or another token each
    draw afresh; the least recently used goes past the size; what msgpack cannot encode is not kept."""
    calls: list[str] = []

    def draw(v: proposals.IntentPage, csrf: str) -> str:
        calls.append(csrf)
        return str(cards.intent_main(v, csrf, "r"))

    kept = Kept(draw, 2)
    first = kept(view, "tok")
    try:
        msgspec.msgpack.encode(view)
    except OverflowError:  # an integer past 64 bits in a payload: drawn every time, never kept
        assert kept(view, "tok") == first
        assert calls == ["tok", "tok"]
        return
    assert kept(view, "tok") is first
    assert calls == ["tok"]
    previewed = msgspec.structs.replace(view.intent, result={"dry_run": True, "preview": {"would": "x"}})
    moved = [
        msgspec.structs.replace(view, intent=previewed),
        msgspec.structs.replace(view, log=[*view.log, Notification(99, "p", "c", "k", "s", "", 1, NOW)]),
    ]
    for other in moved:
        assert kept(other, "tok") == str(cards.intent_main(other, "tok", "r"))
    assert kept(view, "tok2") != first or not view.waiting
    assert len(calls) == 4
    kept(view, "tok")  # evicted by the three since: drawn again
    assert len(calls) == 5


def test_the_attention_rows_are_kept_per_content() -> None:
    """The attention page's rows, through the template's global: the same records give the same
    text, and a record added gives the fresh drawing."""
    from tickloop.operator.notices import AttentionRecord  # noqa: PLC0415

    nowhere = Path("/nonexistent")
    with open_store("memory://") as store:
        web = WebConfig(Settings(), ["me"], nowhere, nowhere, nowhere, {HOST}, clock=lambda: NOW)
        rows_of = create_app(store, web)[1].env.globals["attention_rows"]
    records = [AttentionRecord(1, NOW, "<b>t</b>", "budget", "approval", "fast", True, None, False)]
    assert rows_of(records) is rows_of(list(records))
    more = [*records, msgspec.structs.replace(records[0], id=2, title="second")]
    assert str(rows_of(more)) == str(rows.attention_rows(more)) != str(rows_of(records))


def test_the_frame_key_is_everything_base_html_reads() -> None:
    source = (HERE / "templates" / "base.html").read_text(encoding="utf-8")
    assert jinja2.meta.find_undeclared_variables(ENV.parse(source)) == set(FRAME_KEYS)


async def _get(app: Any, path: str, cookie: str, method: str) -> tuple[int, bytes]:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(b"host", HOST.encode()), (b"cookie", f"{SESSION_COOKIE}={cookie}".encode())],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    status, body = 0, b""

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, body
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            body += message.get("body", b"")

    await app(scope, receive, send)
    return status, body


PATHS = [
    "/p/me/", "/p/me/approvals", "/p/me/board", "/p/me/timeline", "/p/me/intents", "/p/me/intents/1",
    "/p/me/intents/2", "/p/me/attention", "/p/you/", "/p/you/intents/1", "/p/me/intents/99", "/p/me",
    "/p//", "/p/me/x", "/p/me/intents/1/", "/p/me/intents/1a", "/p/me/intents/\u0661", "/p/me/intents/",
    "/p/a b/board", "/p/nobody/board", "/", "/sessions", "/nowhere",
]  # fmt: skip


def test_every_page_is_the_extends_render_and_found_as_the_router_finds_it() -> None:
    """Through the app, each page's HTML equals the ``{% extends %}`` render of the same context, and
    every path (GET and HEAD) answers as Starlette's router alone answers it."""
    nowhere = Path("/nonexistent")
    with open_store("memory://") as store:
        for name in ("me", "you"):
            store.create_profile(name, now=NOW)
        for title in ("Send the <draft>", "Pay & go"):
            payload = {"body": "hi\nthere", "n": [1]}
            draft = staging.Draft(
                action_type="email",
                title=title,
                recipient="a@x.org",
                payload=payload,
                origin=staging.ORIGIN_FAST,
            )
            staging.stage(store, "me", draft, gate.GateSettings(), now=NOW)
        web = WebConfig(Settings(), ["me", "you"], nowhere, nowhere, nowhere, {HOST}, clock=lambda: NOW)
        app, board = create_app(store, web)
        session = board.sessions.start(now=datetime.now(UTC))
        seen: list[tuple[str, dict[str, Any], str]] = []
        pages = board.pages

        def spy(name: str, context: dict[str, Any]) -> str:
            html = pages(name, context)
            seen.append((name, dict(context), html))
            return html

        board.pages = spy  # type: ignore[assignment]
        inner: Any = app
        while not hasattr(inner, "router"):  # SecurityHeaders -> BodyLimit -> PageRoutes -> Starlette
            inner = inner.app
        plain = SecurityHeaders(inner)
        loop = asyncio.new_event_loop()
        try:
            for path in PATHS:
                for method in ("GET", "HEAD"):
                    fast = loop.run_until_complete(_get(app, path, session.id, method))
                    slow = loop.run_until_complete(_get(plain, path, session.id, method))
                    assert fast == slow, (path, method)
        finally:
            loop.close()
        assert {name for name, _, _ in seen} >= {
            "overview.html",
            "intent.html",
            "timeline.html",
            "problem.html",
        }
        for name, context, html in seen:
            assert html == board.env.get_template(name).render(context), name
            # Our own glyphs are character references, so a page of ASCII data is an ASCII string, which
            # Python encodes by a copy; one "·" made the page a wider string, encoded a character at a time.
            assert html.isascii() or name == "problem.html", name
