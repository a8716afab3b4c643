"""A waiting intent's proposal and decide form (the approvals page's cards and the intent page), and
the intent page itself, drawn in Python.

The intent page reads four rows by index; through Jinja its page (two macros, a dozen conditions, a
filter and an escape per value, every piece yielded through generators) cost three times those reads.
These f-strings draw the same HTML, byte for byte (tests compare them with the templates they replaced,
for hostile text too).

As in ``tickloop.web.rows``: every value from the store is made inert and escaped, on one line
(``cells``) or with its newlines (``_text``: a body, a result); everything else is a number, a time or
a word of our own (a status, a tier, an outcome: our enums).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from markupsafe import Markup, escape

from tickloop.inert import inert
from tickloop.web.kept import Kept
from tickloop.web.rows import cells, whens

if TYPE_CHECKING:
    from tickloop.operator.domain import Intent, Notification, ProgressRow
    from tickloop.web.proposals import IntentPage, Proposal


#: a header with no value (an email with no recipient yet), as the person sees it: "—"
NONE = "&mdash;"


def _text(value: object) -> str:
    """A text shown with its newlines (the templates' ``inert`` filter, then autoescape)."""
    return str(escape(inert("" if value is None else str(value))))


def _json(value: object) -> str:
    """A structured value as the templates' ``json | inert`` showed it."""
    return _text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def proposal(p: Proposal) -> Markup:
    """What the intent would do: its headers (To, Subject), its body, and its other fields."""
    return Markup(_proposal(p))  # noqa: S704  (every value escaped where it was drawn)


def _proposal(p: Proposal) -> str:
    keys = sorted(p.rest, key=str.lower)  # Jinja's dictsort: by key, whatever its case
    texts = cells([v for name, text in p.headers for v in (name, text or "")] + keys)
    cut = 2 * len(p.headers)
    pairs = iter(texts[:cut])
    heads = "".join(
        f"    <dt>{n}</dt><dd>{t if text is not None else NONE}</dd>\n"
        for (_, text), n, t in zip(p.headers, pairs, pairs, strict=True)
    )
    body = "" if p.body is None else f'<div class="mail-body">{_text(p.body)}</div>'
    rest = ""
    if keys:
        fields = "".join(
            f"    <dt>{k}</dt><dd>{_value(p.rest[key])}</dd>\n"
            for key, k in zip(keys, texts[cut:], strict=True)
        )
        rest = f"  <details><summary>Other fields</summary>\n  <dl>\n{fields}  </dl>\n  </details>\n"
    return f'<div class="proposal">\n  <dl class="mail">\n{heads}  </dl>\n{body}{rest}</div>\n'


def _value(value: object) -> str:
    return (
        f'<span class="text">{_text(value)}</span>'
        if isinstance(value, str)
        else f"<code>{_json(value)}</code>"
    )


def decide_form(i: Intent, label: str, csrf: str, pq: str, note_id: str) -> Markup:
    """Approve and Deny, each naming the intent ("Approve #43 · email to ada@…"), with a note."""
    what, csrf, pq, note_id = cells([label, csrf, pq, note_id])
    return Markup(_decide(i.id, what, csrf, pq, note_id))  # noqa: S704  (every value escaped above)


def _decide(n: int, what: str, csrf: str, pq: str, note_id: str) -> str:
    """The decide form of intent ``n``, its texts already escaped."""
    return (
        f'<form method="post" action="/p/{pq}/intents/{n}/decide" class="decide" data-intent="{n}">\n'
        f'  <input type="hidden" name="csrf" value="{csrf}">\n'
        f'  <input type="hidden" name="intent" value="{n}">\n'
        f'  <label for="{note_id}">Note (optional)</label>\n'
        f'  <textarea id="{note_id}" name="note" rows="2" maxlength="2000"></textarea>\n'
        '  <div class="buttons">\n'
        f'    <button type="submit" name="decision" value="approve" class="primary" data-intent="{n}">'
        f'<span class="verb">Approve #{n}</span> <span class="what">&middot; {what}</span></button>\n'
        f'    <button type="submit" name="decision" value="deny" class="danger" data-intent="{n}">'
        f'<span class="verb">Deny #{n}</span> <span class="what">&middot; {what}</span></button>\n'
        "  </div>\n</form>\n"
    )


def intent_main(view: IntentPage, csrf: str, pq: str) -> Markup:
    """The intent page's content: its status, its life, the proposal (and the decision, while it
    waits), the way back from a dead end, its result, and the log lines and rows that name it."""
    i = view.intent
    texts = cells(
        [i.title, i.action_type, i.recipient, i.origin.tick_kind, csrf, pq]
        + [v for e in view.life for v in (e.state, e.text)]
    )
    title, kind, recipient, origin, csrf, pq = texts[:6]
    pairs = iter(texts[6:])
    times = whens([e.at for e in view.life if e.at is not None])[::-1]
    life = "".join(
        f'  <li><span class="st st-{state}">{state}</span> <span class="muted">'
        f"{times.pop() if e.at is not None else ''}</span> {text}</li>\n"
        for e, state, text in zip(view.life, pairs, pairs, strict=True)
    )
    parts = [
        f"<h1>#{i.id} {title}</h1>\n",
        _status(i, kind, recipient, origin),
        f'<h2>Life</h2>\n<ol class="life">\n{life}</ol>\n<h2>Proposal</h2>\n{_card(view, csrf, pq)}',
    ]
    if i.status in _DEAD_ENDS:
        parts.append(_reconcile(i, csrf, pq))
    if i.result:
        parts.append(f"<details open><summary>Result</summary><pre>{_json(i.result)}</pre></details>")
    parts.append(f'<h2>Log lines</h2>\n<ul class="log">\n{_log(view.log)}</ul>\n')
    parts.append(f'<h2>Progress rows</h2>\n<ul class="log">\n{_trail(view.rows)}</ul>\n')
    return Markup("".join(parts))  # noqa: S704  (every value escaped where it was drawn)


#: intent pages kept (a few KB each): the pages a few sessions have open
INTENTS_KEPT = 64
_kept_main = Kept(intent_main, INTENTS_KEPT)


def intent_blocks(context: Mapping[str, object]) -> tuple[str, str]:
    """intent.html's title and main blocks, drawn without Jinja (``tickloop.web.frame.Drawn``), the
    main block kept per everything it shows (``tickloop.web.kept``)."""
    view = cast("IntentPage", context["view"])
    main = _kept_main(view, str(context["csrf"]), str(context["pq"]))
    return f"Intent #{view.intent.id}", main


def _card(view: IntentPage, csrf: str, pq: str) -> str:
    """The proposal, what fed it and, while it waits, the decide form; ``csrf`` and ``pq`` escaped."""
    i, card = view.intent, view.card
    parts = [_proposal(card.proposal), "\n"]
    if card.fed_by:
        said = [
            o.payload.get("subject") or o.payload.get("title") or o.payload.get("summary") or ""
            for o in card.fed_by
        ]
        fed = iter(cells([v for o, t in zip(card.fed_by, said, strict=True) for v in (o.source, str(t))]))
        items = "".join(f'<li><span class="tag">{s}</span> {t}</li>' for s, t in zip(fed, fed, strict=True))
        parts.append(f'<p>Fed by:</p>\n<ul class="plain">{items}</ul>\n')
    if view.waiting:
        [what] = cells([card.label])
        parts.append(
            f'<div class="card approval" data-card="{i.id}">{_decide(i.id, what, csrf, pq, "note")}</div>\n'
        )
    return "".join(parts)


#: the statuses a person reconciles (an IntentStatus is a str: its value is its text and its hash)
_DEAD_ENDS = frozenset({"failed", "needs_human"})


def _status(i: Intent, kind: str, recipient: str, origin: str) -> str:
    """The status line; ``kind``, ``recipient`` and ``origin`` already escaped."""
    st = i.status  # a StrEnum: formats as its value
    line = (
        f'<p>Status: <strong class="st st-{st}" id="intent-status">{st}</strong>'
        f' &middot; <span class="tag">{kind}</span>'
        f" ({i.tier}){f' to {recipient}' if i.recipient else ''}"
        f' &middot; from <span id="intent-origin">{origin}</span>'
    )
    if i.origin.tainted:
        line += ' &middot; <strong class="warn">tainted</strong>'
    result = i.result
    preview = result.get("preview") if result else None
    if result and result.get("dry_run") is True and isinstance(preview, Mapping):
        [would] = cells([str(preview.get("would", ""))])
        line += f' &middot; <span class="tag" id="intent-dry-run">dry-run: would be {would}</span>'
    elif i.dry_run and st in {"sent", "completed"}:
        line += ' &middot; <span class="tag" id="intent-dry-run">dry-run</span>'
    return line + "</p>\n"


def _reconcile(i: Intent, csrf: str, pq: str) -> str:
    """Retry, and for an intent that needs a person, done by hand or did not happen (``csrf`` and
    ``pq`` already escaped)."""
    by_hand = (
        '    <button type="submit" name="reconcile" value="done_by_hand">Done by hand</button>\n'
        '    <button type="submit" name="reconcile" value="did_not_happen">Did not happen</button>\n'
        if i.status == "needs_human"
        else ""
    )
    return (
        f'<form method="post" action="/p/{pq}/intents/{i.id}/reconcile" class="decide card" id="reconcile">\n'
        f'  <input type="hidden" name="csrf" value="{csrf}">\n'
        '  <label for="reconcile-note">What changed, or what you found (a retry needs it)</label>\n'
        '  <textarea id="reconcile-note" name="note" rows="2" maxlength="2000"></textarea>\n'
        '  <div class="buttons">\n'
        '    <button type="submit" name="reconcile" value="retry" class="primary">Retry</button>\n'
        f"{by_hand}  </div>\n</form>\n"
    )


def _log(log: list[Notification]) -> str:
    if not log:
        return '  <li class="muted">No log lines name this intent.</li>\n'
    texts = iter(cells([v for n in log for v in (n.channel, n.kind, n.subject)]))
    times = whens([n.sent_at for n in log])
    return "".join(
        f'  <li><span class="muted">{at}</span> <span class="tag">{channel}/{kind}</span> {subject}'
        f"{f'<pre>{_text(n.body)}</pre>' if n.body else ''}</li>\n"
        for n, at, (channel, kind, subject) in zip(
            log, times, zip(texts, texts, texts, strict=True), strict=True
        )
    )


def _trail(rows: list[ProgressRow]) -> str:
    if not rows:
        return '  <li class="muted">None.</li>\n'
    texts = iter(cells([v for r in rows for v in (r.tick_kind, r.detail, r.error)]))
    times = whens([r.started_at for r in rows])
    return "".join(
        f'  <li><span class="muted">{at}</span> {kind} '
        f'<span class="o o-{r.outcome}">{r.outcome}</span> {detail} {error}</li>\n'
        for r, at, (kind, detail, error) in zip(
            rows, times, zip(texts, texts, texts, strict=True), strict=True
        )
    )
