"""Each dashboard page's read function on a real store, without HTTP: what the person sees and decides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.config import Settings
from tickloop.errors import ConflictError, NotFoundError
from tickloop.operator import gate, staging
from tickloop.operator.domain import (
    DecisionKind,
    IntentStatus,
    NewPlanStep,
    NewProgress,
    Outcome,
    ProgressRow,
    StepStatus,
    TaskStatus,
    TickKind,
)
from tickloop.operator.notices import ATTENTION, approval_candidate, dashboard_link
from tickloop.operator.store import Store, open_store
from tickloop.operator.ticks.executor import tier_floor_passes
from tickloop.web import pages, proposals
from tickloop.web.timeline import LEFT, WIDTH, chart

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = "me"


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store("memory://") as opened:
        opened.create_profile(P, now=NOW)
        goal = opened.add_goal_model(P, title="Ship the thesis", now=NOW)
        opened.activate_goal_model(P, goal.version, now=NOW)
        yield opened


def email(
    store: Store,
    title: str = "Send the draft",
    *,
    tainted: bool = False,
    step_id: int | None = None,
    fed_by: list[int] | None = None,
    body: str = "hi",
    recipient: str = "a@example.org",
) -> int:
    payload: dict[str, object] = {"body": body, **({"step_id": step_id} if step_id else {})}
    if fed_by is not None:
        payload["fed_by"] = fed_by
    draft = staging.Draft(action_type="email", title=title, recipient=recipient, payload=payload,
                          origin=staging.ORIGIN_FAST, tainted=tainted)  # fmt: skip
    made, _ = staging.stage(store, P, draft, gate.GateSettings(), now=NOW)
    return made.id


def row(store: Store, kind: str, outcome: Outcome, at: datetime, intent_id: int | None = None) -> None:
    store.record_progress(P, NewProgress(kind, outcome, at, at + timedelta(seconds=2), intent_id=intent_id))


def test_overview_shows_goal_step_last_ticks_waiting_and_attention_against_the_budget(store: Store) -> None:
    """The one screen: active goal, current step, newest row per kind, waiting count, budget."""
    store.replace_plan(P, 1, [NewPlanStep("Write 3.1")], now=NOW)
    row(store, "fast", Outcome.GATE_STOP, NOW)
    email(store)
    settings = Settings(attention={"budgetPerDay": 3})
    view = pages.overview_page(store, P, settings, now=NOW)
    assert view.status.goal == "v1: Ship the thesis"
    assert view.status.current_step == "Write 3.1"
    assert view.status.last_ticks["fast"] is not None
    assert view.status.last_ticks["fast"].outcome is Outcome.GATE_STOP
    assert view.status.last_ticks["observe"] is None
    assert (view.waiting, view.attention_budget) == (1, 3)
    assert not view.monitor_ran  # before the stall monitor's first pass: "never ran", not green


def test_the_monitor_card_says_never_ran_until_the_monitor_recorded_a_condition(store: Store) -> None:
    """Without any condition the monitor recorded, the card is not green; once one is, it shows them."""
    assert not pages.overview_page(store, P, Settings(), now=NOW).monitor_ran
    store.put_condition(P, "stuck", active=False, since=None, last_notified_at=None, now=NOW)
    view = pages.overview_page(store, P, Settings(), now=NOW)
    assert view.monitor_ran
    assert not any(view.status.conditions.values())


def test_a_clean_monitor_pass_turns_never_ran_into_clear_with_its_time(store: Store) -> None:
    """A healthy profile's monitor pass records no condition, yet afterwards the card says when the
    monitor last looked (all clear), not "never ran"; a pass over another profile does not count."""
    from tickloop.operator.monitor import monitor_pass  # noqa: PLC0415

    store.create_profile("other", now=NOW)
    row(store, "fast", Outcome.DONE, NOW - timedelta(minutes=1))
    monitor_pass(store, Settings(), now=NOW - timedelta(minutes=5), env={}, profiles=["other"])
    assert not pages.overview_page(store, P, Settings(), now=NOW).monitor_ran
    report = monitor_pass(store, Settings(), now=NOW, env={}, profiles=[P])
    assert (report.errors, report.notices) == ([], [])
    assert store.list_conditions([P]) == []  # clean: nothing recorded but the pass itself
    view = pages.overview_page(store, P, Settings(), now=NOW)
    assert view.monitor_ran
    assert view.monitor_pass == NOW
    assert not any(view.status.conditions.values())


def test_approvals_show_the_plan_step_and_only_the_observations_recorded_with_the_intent(
    store: Store,
) -> None:
    """A waiting intent comes with its step and the observations named in its ``fed_by``; one staged
    without any (an MCP or CLI intent) shows none, however many tainted mails arrived around it."""
    [step] = store.replace_plan(P, 1, [NewPlanStep("Reply to the examiner")], now=NOW)
    urgent = store.add_observation(P, source="mail", content_hash="h1", payload={"subject": "Urgent <b>"},
                                   now=NOW - timedelta(minutes=5))  # fmt: skip
    store.add_observation(P, source="mail", content_hash="h2", payload={"subject": "unrelated"},
                          now=NOW - timedelta(minutes=4))  # fmt: skip
    assert urgent is not None
    first = email(store, "clean one", step_id=step.id)
    second = email(store, "tainted one", tainted=True, fed_by=[urgent.id, 99999])
    third = email(store, "staged over MCP", tainted=True)
    view = proposals.approvals_page(store, P)
    assert [w.intent.id for w in view.items] == [first, second, third]  # oldest first
    assert view.items[0].step is not None
    assert view.items[0].step.title == "Reply to the examiner"
    assert view.items[0].fed_by == []
    assert [o.payload["subject"] for o in view.items[1].fed_by] == ["Urgent <b>"]
    assert view.items[2].fed_by == []
    assert view.items[1].intent.verdict_reasons


def test_an_email_reads_as_a_mail_client_shows_it_and_its_buttons_name_it(store: Store) -> None:
    """To, Subject and the body with its real line breaks; the other fields apart; a short label."""
    intent_id = email(
        store, "Chapter 3", body="Dear Ada,\n\nhere it is.\n", recipient="ada.lovelace@example.org"
    )
    card = proposals.approvals_page(store, P).items[0]
    assert card.proposal.headers == [("To", "ada.lovelace@example.org"), ("Subject", "Chapter 3")]
    assert card.proposal.body == "Dear Ada,\n\nhere it is.\n"
    assert "body" not in card.proposal.rest
    assert card.label == "email to ada.lovelace@examp…"
    assert len(card.label) == proposals.LABEL_CHARS
    assert card.intent.id == intent_id


def test_approvals_count_every_waiting_intent_and_page_through_all_of_them_oldest_first(store: Store) -> None:
    """With 45 waiting the count says 45 and three pages of 20, 20 and 5 reach every one, in order."""
    ids = [email(store, f"mail {n}") for n in range(45)]
    first = proposals.approvals_page(store, P)
    assert first.total == 45
    assert [w.intent.id for w in first.items] == ids[:20]
    assert first.next_after == ids[19]
    second = proposals.approvals_page(store, P, after=ids[19])
    third = proposals.approvals_page(store, P, after=second.next_after or 0)
    assert [w.intent.id for w in second.items + third.items] == ids[20:]
    assert third.next_after is None
    assert pages.overview_page(store, P, Settings(), now=NOW).waiting == 45
    assert pages.fingerprint(store, [P])[1] == {P: 45}


def test_a_web_decision_is_the_persons_and_passes_the_executors_tier_floor(store: Store) -> None:
    """Approving on the dashboard records `web:<login>` and the executor's floor accepts it like the CLI's."""
    intent_id = email(store)
    decision = proposals.decide(store, P, intent_id, approve=True, note="  fine  ", now=NOW)
    assert decision.by.startswith("web:")
    assert len(decision.by) > len("web:")
    assert decision.note == "fine"
    [claimed] = store.claim_intents(P, owner="x", now=NOW)
    assert claimed.claim_prior is IntentStatus.APPROVED
    assert tier_floor_passes(claimed.tier, claimed, store.get_decision(P, decision.id))


def test_a_second_decision_on_the_same_intent_is_refused_in_words(store: Store) -> None:
    """Two tabs cannot both decide: the second POST loses, and says who decided and how."""
    intent_id = email(store)
    store.decide(P, intent_id, DecisionKind.DENY, by="cli:ana", now=NOW)
    assert store.get_intent(P, intent_id).status is IntentStatus.DENIED
    with pytest.raises(ConflictError) as refused:
        proposals.decide(store, P, intent_id, approve=True, note="", now=NOW)
    assert refused.value.message.startswith(
        f"Not recorded: #{intent_id} · email to a@example.org is no longer"
    )
    assert "It was denied by cli:ana at 2026-11-30 12:00:00 UTC." in refused.value.message


def test_the_same_decision_sent_again_is_recorded_once(store: Store) -> None:
    """A retry after a timeout returns the decision already recorded, not a second one or an error."""
    intent_id = email(store)
    once = proposals.decide(store, P, intent_id, approve=True, note="ok", now=NOW)
    again = proposals.decide(store, P, intent_id, approve=True, note="ok", now=NOW)
    assert again.id == once.id
    with pytest.raises(ConflictError):
        proposals.decide(store, P, intent_id, approve=False, note="", now=NOW)


def test_the_board_lists_tasks_by_priority_marks_blocked_and_the_current_step(store: Store) -> None:
    """Tasks highest priority first, the blocked ones counted, the first pending step current."""
    low = store.add_task(P, "low", now=NOW, priority=1)
    store.add_task(P, "high", now=NOW, priority=9)
    store.set_task_status(P, low.id, TaskStatus.BLOCKED, now=NOW)
    done, nxt = store.replace_plan(P, 1, [NewPlanStep("a"), NewPlanStep("b")], now=NOW)
    store.set_step_status(P, done.id, StepStatus.DONE, now=NOW)
    view = pages.board_page(store, P)
    assert [t.title for t in view.tasks] == ["high", "low"]
    assert view.blocked == 1
    assert view.current == nxt.id


def test_the_timeline_shows_a_silent_stretch_as_a_gap_and_filters_rows(store: Store) -> None:
    """Ticks every 5 minutes, then 3 hours of nothing: one gap of 3h; the rows filter by kind and outcome."""
    for i in range(10):
        row(store, "fast", Outcome.DONE if i % 2 else Outcome.NOOP, NOW + timedelta(minutes=5 * i))
        row(store, "observe", Outcome.DONE, NOW + timedelta(minutes=5 * i, seconds=30))
    later = NOW + timedelta(minutes=45, hours=3)
    row(store, "fast", Outcome.FAILED, later)
    view = pages.timeline_page(store, P, now=later + timedelta(seconds=10))
    assert len(view.chart.marks) == 21
    [gap] = view.chart.gaps
    assert gap.label.startswith("no tick for 2h 59m") or gap.label.startswith("no tick for 3h")
    assert gap.w > 100
    failed = pages.timeline_page(store, P, now=later, kind="fast", outcome="failed")
    assert [r.outcome for r in failed.rows] == [Outcome.FAILED]
    noise = pages.timeline_page(store, P, now=later, kind="<script>", outcome="nope")
    assert (noise.kind, noise.outcome, len(noise.rows)) == ("", "", 21)


def test_a_loop_that_is_down_now_shows_a_gap_at_the_right_edge(store: Store) -> None:
    """The stretch from the newest row to now counts: a dead loop is visible without a new row."""
    for i in range(5):
        row(store, "fast", Outcome.DONE, NOW + timedelta(minutes=5 * i))
    rows = store.recent_progress(P, limit=10)
    assert chart(rows, now=NOW + timedelta(minutes=25)).gaps == []
    [gap] = chart(rows, now=NOW + timedelta(hours=6)).gaps
    assert gap.x + gap.w == pytest.approx(952, abs=1)


def test_intents_filter_by_status_type_and_title_words(store: Store) -> None:
    """The history narrows by status, type and words in the title (case-insensitive)."""
    keep = email(store, "Quarterly REPORT to Ana")
    email(store, "something else")
    denied = email(store, "report draft")
    proposals.decide(store, P, denied, approve=False, note="", now=NOW)
    assert [i.id for i in pages.intents_page(store, P, query="report").intents] == [denied, keep]
    assert [i.id for i in pages.intents_page(store, P, status="denied").intents] == [denied]
    assert pages.intents_page(store, P, action_type="note").intents == []
    assert pages.intents_page(store, P, status="bogus").status == ""


def test_an_intents_life_runs_from_proposed_to_sent_with_its_decision_and_log_lines(store: Store) -> None:
    """proposed -> requires_approval -> approved -> claimed -> sent, with the executor's log and row."""
    intent_id = email(store)
    proposals.decide(store, P, intent_id, approve=True, note="go", now=NOW)
    store.claim_intents(P, owner="exec-1", now=NOW)
    store.mark_sending(P, intent_id, owner="exec-1", now=NOW)
    store.finish_intent(P, intent_id, IntentStatus.SENT, owner="exec-1", now=NOW, result={"id": "<m@x>"})
    store.log_notification(P, channel="executor", kind="sent", subject=f"sent {intent_id}", now=NOW,
                           intent_id=intent_id)  # fmt: skip
    row(store, "executor", Outcome.DONE, NOW, intent_id=intent_id)
    view = proposals.intent_page(store, P, intent_id)
    assert [e.state for e in view.life] == ["proposed", "requires_approval", "approved", "claimed", "sent"]
    assert "go" in view.life[2].text
    assert [n.subject for n in view.log] == [f"sent {intent_id}"]
    assert len(view.rows) == 1
    assert not view.waiting
    with pytest.raises(NotFoundError):
        proposals.intent_page(store, P, intent_id + 100)


def test_attention_lists_each_decision_with_the_check_that_made_it(store: Store) -> None:
    """Every record of the attention gate shows its check, and today's spend against the budget."""
    for check, sent in (("quiet_hours", False), ("sent", True)):
        body = json.dumps({"check": check, "kind": "notice", "sent": sent, "source": "monitor.stuck.fire"})
        store.log_notification(P, channel=ATTENTION, kind=ATTENTION, subject=f"t-{check}", body=body, now=NOW)
    store.log_notification(P, channel="email", kind="monitor", subject="not a decision", now=NOW)
    store.spend_attention(P, now=NOW, day="2026-11-30", cap=5, min_gap=timedelta(0))
    view = pages.attention_page(store, P, Settings(), now=NOW)
    seen = [(r.title, r.check, r.sent) for r in view.records]
    assert seen == [("t-sent", "sent", True), ("t-quiet_hours", "quiet_hours", False)]
    assert (view.spent_today, view.budget) == (1, 6)


def test_the_fingerprint_moves_when_a_tick_writes_a_row_or_a_decision_is_made(store: Store) -> None:
    """Live refresh fires on the changes the person cares about, and not otherwise."""
    intent_id = email(store)
    first, waiting = pages.fingerprint(store, [P])
    assert waiting == {P: 1}
    assert pages.fingerprint(store, [P])[0] == first
    proposals.decide(store, P, intent_id, approve=True, note="", now=NOW)
    second, waiting = pages.fingerprint(store, [P])
    assert (second != first, waiting) == (True, {P: 0})
    row(store, "executor", Outcome.DONE, NOW)
    assert pages.fingerprint(store, [P])[0] != second


def test_the_approval_notice_links_to_the_dashboards_page_for_the_intent(store: Store) -> None:
    """With `[web] baseUrl` the notice names the intent's page; without it, no link; a bad URL is named."""
    intent = store.get_intent(P, email(store))
    link = dashboard_link(Settings(web={"baseUrl": "https://ops.example:8765/"}), P, intent.id)
    assert link == f"https://ops.example:8765/p/me/intents/{intent.id}"
    assert approval_candidate(intent, link=link).title.endswith(link)
    assert dashboard_link(Settings(), P, intent.id) == ""
    with pytest.raises(Exception, match=r"\[web\] baseUrl"):
        dashboard_link(Settings(web={"baseUrl": "javascript:alert(1)"}), P, intent.id)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([k.value for k in TickKind]),
            st.sampled_from(list(Outcome)),
            st.integers(0, 10**7),
            st.integers(0, 3600),
        ),
        max_size=60,
    ),
    st.integers(0, 10**7),
)
def test_the_chart_keeps_every_mark_and_gap_inside_the_drawing(
    rows: list[tuple[str, Outcome, int, int]], after: int
) -> None:
    """Whatever the rows (any order, overlapping, long or instant ticks), every mark and gap lies
    within the SVG's width, gaps do not overlap, and there is one mark per row."""
    made = [
        ProgressRow(i + 1, P, kind, outcome, "", None, "", "", NOW + timedelta(seconds=start),
                    NOW + timedelta(seconds=start + took))
        for i, (kind, outcome, start, took) in enumerate(rows)
    ]  # fmt: skip
    drawn = chart(made, now=NOW + timedelta(seconds=after))
    assert len(drawn.marks) == len(rows)
    for mark in drawn.marks:
        assert LEFT - 0.01 <= mark.x <= WIDTH
        assert mark.w >= 2
    edges = sorted((g.x, g.x + g.w) for g in drawn.gaps)
    for (_, right), (nxt, _) in pairwise(edges):
        assert right <= nxt + 0.01
    assert all(g.x >= LEFT - 0.01 and g.w > 0 and g.x + g.w <= WIDTH for g in drawn.gaps)


def test_the_intents_page_searches_every_intent_and_pages_below_the_last_one(store: Store) -> None:
    """A title word found in the oldest of 450 intents (the page read only the newest 1000 before
    filtering); 450 intents make three pages of at most 200, newest first, that reach every one."""
    ids = [email(store, "needle" if n == 0 else f"hay {n}") for n in range(450)]
    assert [i.id for i in pages.intents_page(store, P, query="NEEDLE").intents] == [ids[0]]
    first = pages.intents_page(store, P)
    second = pages.intents_page(store, P, before=first.older)
    third = pages.intents_page(store, P, before=second.older)
    seen = [i.id for i in first.intents + second.intents + third.intents]
    assert seen == list(reversed(ids))
    assert third.older is None


def test_a_waiting_card_is_rendered_once_per_version_and_never_shown_stale(store: Store) -> None:
    """The card cache gives the same HTML while nothing the card shows changed, and a fresh card when
    the intent changed, for another session's CSRF token, or with the observation it recorded."""
    from tickloop.web.fragments import CardCache  # noqa: PLC0415
    from tickloop.web.guard import _environment  # noqa: PLC0415

    seen = store.add_observation(
        P, source="mail", content_hash="h1", payload={"subject": "Ada wrote"}, now=NOW
    )
    assert seen is not None
    intent_id = email(store, "Chapter 3", fed_by=[seen.id])
    cards = CardCache(_environment(), kept=2)
    [item] = proposals.approvals_page(store, P).items
    first = cards([item], "csrf-one", P)
    assert 'value="csrf-one"' in first
    assert f"Approve #{intent_id}" in first
    assert "Ada wrote" in first
    assert cards([item], "csrf-one", P) is not first  # a new join, of the cached card:
    assert cards.card(item, "csrf-one", P) is cards.card(item, "csrf-one", P)
    assert 'value="csrf-two"' in cards([item], "csrf-two", P)
    store.decide(P, intent_id, DecisionKind.DENY, by="cli:x", now=NOW + timedelta(seconds=1))
    moved = store.get_intent(P, intent_id)
    changed = proposals.waiting_card(store, P, moved)
    assert cards.card(changed, "csrf-one", P) is not cards.card(item, "csrf-one", P)
    assert str(cards([], "csrf-one", P)) == ""
