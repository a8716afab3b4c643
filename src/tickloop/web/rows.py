"""Long lists drawn in Python: the attention page's records (up to 1,000), the timeline's 200 rows, and
the board's tasks and plan steps.

A Jinja loop over such a list cost several times the store reads it shows: every cell an attribute
lookup, a filter and an escape, and every piece yielded through the page's generators. These f-strings
draw the same HTML (the tests compare them with the loops they replaced) for a fraction of that.

Every value that comes from the store passes ``cells``: made inert on one line, then escaped by
markupsafe, as the templates' ``line`` filter and autoescape do. Everything else is a number, a time
or a word of our own (an outcome or a status is one of our enums: the store and the enum check it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from tickloop.inert import inert

if TYPE_CHECKING:
    from tickloop.operator.domain import PlanStep, ProgressRow, Task
    from tickloop.operator.notices import AttentionRecord

#: joins the texts that one markupsafe call escapes together (see ``cells``)
_SEP = "\x00"


def cells(values: Iterable[str]) -> list[str]:
    """Each store value shown on one line (control and bidi characters made visible by ``inert``),
    then HTML-escaped: all of them by ONE call of markupsafe's ``escape``, not one call per cell.

    That is exact: escaping replaces each character on its own and never makes or removes a NUL, and
    no inert text holds one (a NUL shows as ``\\u0000``), so escaping the NUL-joined texts and
    splitting them at the NULs gives each text's own escape."""
    lines = [t if t.isprintable() else inert(t, keep_newlines=False) for t in values]
    return str(escape(_SEP.join(lines))).split(_SEP) if lines else []


#: "00" to "99", for a time's fields by lookup: ``isoformat`` formats each with C's sprintf, which
#: cost ten times as much (a timeline formats 2,200 times)
_TWO = [f"{i:02d}" for i in range(100)]


def when(value: datetime | None) -> str:
    """A time as "YYYY-MM-DD HH:MM:SS" UTC: its ``isoformat(" ", "seconds")``, at a tenth of the cost."""
    return "" if value is None else whens([value])[0]


def whens(values: Sequence[datetime]) -> list[str]:
    """``when`` of each time, in one call for a whole list."""
    utc = [v.astimezone(UTC) for v in values]
    years = {y: f"{y:04d}" for y in {d.year for d in utc}}  # one format per year: a list spans one or two
    return [
        f"{years[d.year]}-{_TWO[d.month]}-{_TWO[d.day]} {_TWO[d.hour]}:{_TWO[d.minute]}:{_TWO[d.second]}"
        for d in utc
    ]


def attention_rows(records: Sequence[AttentionRecord]) -> Markup:
    """One ``<tr>`` per decision of the attention gate, newest first."""
    if not records:
        return Markup(
            '<tr><td colspan="6" class="muted">The attention gate has decided nothing yet.</td></tr>\n'
        )
    texts = iter(cells([v for r in records for v in (r.check, r.kind, r.source, r.title)]))
    times = whens([r.at for r in records])
    return Markup(  # noqa: S704  (every store value escaped by cells(); a hold time by _fate)
        "".join(
            [
                f'<tr><td data-label="when (UTC)">{at}</td>'
                f'<td data-label="check"><span class="tag">{check}</span></td>'
                f'<td data-label="kind">{kind}</td><td data-label="sent">{_fate(r)}</td>'
                f'<td data-label="source">{source}</td>'
                f'<td class="wrap" data-label="title">{title}</td></tr>\n'
                for r, at, (check, kind, source, title) in zip(
                    records, times, zip(texts, texts, texts, texts, strict=True), strict=True
                )
            ]
        )
    )


def _fate(record: AttentionRecord) -> str:
    """What became of the notice: sent, held until a time, batched for the digest, or silenced."""
    if record.sent:
        return "sent"
    if record.hold_until:
        return str(escape(f"held until {record.hold_until}"))
    return "digest" if record.digest else "silenced"


def progress_rows(rows: Sequence[ProgressRow], pq: str) -> Markup:
    """One ``<tr>`` per progress row; ``pq`` is the profile, already quoted for a path."""
    if not rows:
        return Markup('<tr><td colspan="7" class="muted">No rows match.</td></tr>\n')
    path = f"/p/{escape(pq)}/intents/"
    texts = iter(cells([v for r in rows for v in (r.tick_kind, r.error, r.detail)]))
    times = whens([r.started_at for r in rows])
    return Markup(  # noqa: S704  (every store value escaped by cells(); an outcome is one of ours)
        "".join(
            [
                f'<tr><td data-label="#">{r.id}</td><td data-label="kind">{kind}</td>'
                f'<td data-label="outcome"><span class="o o-{r.outcome}">{r.outcome}</span></td>'
                f'<td data-label="started (UTC)">{at}</td>'
                f'<td data-label="took">{(r.ended_at - r.started_at).total_seconds():.1f} s</td>\n'
                f'<td data-label="intent">{_intent_link(r.intent_id, path)}</td>\n'
                f'<td class="wrap" data-label="detail / error">'
                f"{error}{' &middot; ' if r.error and r.detail else ''}{detail}</td></tr>\n"
                for r, at, (kind, error, detail) in zip(
                    rows, times, zip(texts, texts, texts, strict=True), strict=True
                )
            ]
        )
    )


def _intent_link(intent_id: int | None, path: str) -> str:
    return f'<a href="{path}{intent_id}">#{intent_id}</a>' if intent_id else ""


def task_items(tasks: Sequence[Task]) -> Markup:
    """One ``<li>`` per task on the board, by priority; a blocked one says so in words."""
    if not tasks:
        return Markup('  <li class="muted">The board is empty.</li>\n')
    titles = cells([t.title for t in tasks])
    return Markup(  # noqa: S704  (a title escaped by cells(); a status is one of ours)
        "".join(
            [
                f'  <li class="task s-{t.status}"><span class="prio">{t.priority}</span> {title} '
                f'<span class="tag">{t.status}</span>{_BLOCKED if t.status == "blocked" else ""}</li>\n'
                for t, title in zip(tasks, titles, strict=True)
            ]
        )
    )


_BLOCKED = ' <strong class="warn">BLOCKED</strong>'


def plan_items(plan: Sequence[PlanStep], current: int | None) -> Markup:
    """One ``<li>`` per step of the plan, the ``current`` one marked."""
    if not plan:
        return Markup('  <li class="muted">No plan yet: the slow tick writes one.</li>\n')
    titles = cells([s.title for s in plan])
    return Markup(  # noqa: S704  (a title escaped by cells(); a status is one of ours)
        "".join([_step(s, title, now=s.id == current) for s, title in zip(plan, titles, strict=True)])
    )


def _step(s: PlanStep, title: str, *, now: bool) -> str:
    mark, classes = ("<strong>&#9654; now:</strong> ", " current") if now else ("", "")  # ▶, in ASCII
    return (
        f'  <li class="step s-{s.status}{classes}">{mark}{title} <span class="tag">{s.status}</span></li>\n'
    )
