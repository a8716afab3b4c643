"""The table rows drawn in Python (``tickloop.web.rows``) are exactly what the templates drew before,
for any text the store may hold: hostile HTML, quotes, terminal escapes, bidi overrides, newlines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.config import Settings
from tickloop.operator.domain import Outcome, PlanStep, ProgressRow, StepStatus, Task, TaskStatus
from tickloop.operator.notices import AttentionRecord
from tickloop.web.guard import Guards, WebConfig
from tickloop.web.rows import attention_rows, cells, plan_items, progress_rows, task_items, when

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
#: the templates' loops these functions replaced, rendered by the dashboard's own environment
ATTENTION_LOOP = """{% for r in records %}
<tr><td data-label="when (UTC)">{{ r.at | when }}</td><td data-label="check"><span class="tag">{{ r.check | line }}</span></td><td data-label="kind">{{ r.kind | line }}</td><td data-label="sent">{{ 'sent' if r.sent else ('held until ' ~ r.hold_until if r.hold_until else ('digest' if r.digest else 'silenced')) }}</td><td data-label="source">{{ r.source | line }}</td><td class="wrap" data-label="title">{{ r.title | line }}</td></tr>
{% else %}
<tr><td colspan="6" class="muted">The attention gate has decided nothing yet.</td></tr>
{% endfor %}"""  # noqa: E501
PROGRESS_LOOP = """{% for r in rows %}
<tr><td data-label="#">{{ r.id }}</td><td data-label="kind">{{ r.tick_kind | line }}</td><td data-label="outcome"><span class="o o-{{ r.outcome.value }}">{{ r.outcome.value }}</span></td><td data-label="started (UTC)">{{ r.started_at | when }}</td><td data-label="took">{{ '%.1f' % (r.ended_at - r.started_at).total_seconds() }} s</td>
<td data-label="intent">{% if r.intent_id %}<a href="/p/{{ pq }}/intents/{{ r.intent_id }}">#{{ r.intent_id }}</a>{% endif %}</td>
<td class="wrap" data-label="detail / error">{{ r.error | line }}{% if r.error and r.detail %} &middot; {% endif %}{{ r.detail | line }}</td></tr>
{% else %}
<tr><td colspan="7" class="muted">No rows match.</td></tr>
{% endfor %}"""  # noqa: E501
TASK_LOOP = """{% for t in tasks %}
  <li class="task s-{{ t.status.value }}"><span class="prio">{{ t.priority }}</span> {{ t.title | line }} <span class="tag">{{ t.status.value }}</span>{% if t.status.value == 'blocked' %} <strong class="warn">BLOCKED</strong>{% endif %}</li>
{% else %}
  <li class="muted">The board is empty.</li>
{% endfor %}"""  # noqa: E501
STEP_LOOP = """{% for s in plan %}
  <li class="step s-{{ s.status.value }}{% if s.id == current %} current{% endif %}">{% if s.id == current %}<strong>&#9654; now:</strong> {% endif %}{{ s.title | line }} <span class="tag">{{ s.status.value }}</span></li>
{% else %}
  <li class="muted">No plan yet: the slow tick writes one.</li>
{% endfor %}"""  # noqa: E501
HOSTILE = [
    "<script>alert(1)</script>",
    '" onmouseover="x',
    "a & b's",
    "\x1b]0;title\x07x",
    "\u202eevil",
    "two\nlines",
    "",
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30))


def environment() -> Guards:
    config = WebConfig(
        Settings(), None, Path("/nonexistent"), Path("/nonexistent"), Path("/nonexistent"), set()
    )
    return Guards(config)


ENV = environment().env


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(texts, texts, texts, texts, st.booleans(), st.one_of(st.none(), texts)), max_size=4)
)
def test_attention_rows_are_what_the_template_drew(
    fields: list[tuple[str, str, str, str, bool, str | None]],
) -> None:
    records = [
        AttentionRecord(i, NOW - timedelta(minutes=i), title, check, kind, source, sent, hold, i % 2 == 0)
        for i, (title, check, kind, source, sent, hold) in enumerate(fields)
    ]
    assert str(attention_rows(records)) == ENV.from_string(ATTENTION_LOOP).render(records=records)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            texts, texts, texts, st.sampled_from(list(Outcome)), st.one_of(st.none(), st.integers(1, 10**9))
        )
    ),
    st.sampled_from(["r", "a%20b", "%3Cx%3E"]),
)
def test_progress_rows_are_what_the_template_drew(
    fields: list[tuple[str, str, str, Outcome, int | None]], pq: str
) -> None:
    rows = [
        ProgressRow(
            i + 1, "p", kind, outcome, "", intent, error, detail, NOW, NOW + timedelta(seconds=i * 1.25)
        )
        for i, (kind, error, detail, outcome, intent) in enumerate(fields)
    ]
    assert str(progress_rows(rows, pq)) == ENV.from_string(PROGRESS_LOOP).render(rows=rows, pq=pq)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(texts, st.sampled_from(list(TaskStatus)), st.integers(0, 3)), max_size=4),
    st.lists(st.tuples(texts, st.sampled_from(list(StepStatus))), max_size=4),
    st.integers(0, 5),
)
def test_board_items_are_what_the_template_drew(
    tasks: list[tuple[str, TaskStatus, int]], steps: list[tuple[str, StepStatus]], current: int
) -> None:
    board = [Task(i, "p", title, prio, status, "", NOW, NOW) for i, (title, status, prio) in enumerate(tasks)]
    plan = [PlanStep(i, "p", 1, i, title, None, status, NOW) for i, (title, status) in enumerate(steps)]
    assert str(task_items(board)) == ENV.from_string(TASK_LOOP).render(tasks=board)
    assert str(plan_items(plan, current)) == ENV.from_string(STEP_LOOP).render(plan=plan, current=current)


@given(st.datetimes(timezones=st.timezones()))
def test_when_is_the_isoformat_of_the_time_in_utc(moment: datetime) -> None:
    assert when(moment) == moment.astimezone(UTC).isoformat(" ", "seconds")[:19]


@given(st.lists(texts))
def test_cells_escape_each_text_as_one_escape_call_per_text_would(values: list[str]) -> None:
    from markupsafe import escape  # noqa: PLC0415

    from tickloop.inert import inert  # noqa: PLC0415

    assert cells(values) == [str(escape(inert(v, keep_newlines=False))) for v in values]


def test_hostile_text_stays_inert_text() -> None:
    """A title that is markup shows as text; a terminal escape is removed; a bidi override is visible."""
    record = AttentionRecord(
        1, NOW, "<script>alert(1)</script>", "\x1b[31mred", "k", "\u202es", True, None, False
    )
    drawn = str(attention_rows([record]))
    assert "<script>" not in drawn
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in drawn
    assert "\x1b" not in drawn
    assert "\\u202e" in drawn
