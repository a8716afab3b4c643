"""The executor tick: the seed's dry pass, the tier x verdict grid, dry-run arming, the window, endings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tickloop.config import Settings
from tickloop.errors import ConflictError, TransitionError
from tickloop.operator.domain import (
    DecisionKind,
    Intent,
    IntentStatus,
    NewIntent,
    Outcome,
    Tier,
    Verdict,
)
from tickloop.operator.gate import GateSettings, Proposal, judge
from tickloop.operator.handlers import HandlerContext, HandlerRequest, HandlerSpec, handler_for
from tickloop.operator.runner import run_tick
from tickloop.operator.store import Store, open_store
from tickloop.testing import FakeClock

NOW = datetime(2026, 7, 7, 17, 15, tzinfo=UTC)
P = "default"
S = IntentStatus

#: The seed's pass (002 §6.8), in our names: "the person" for Ian, no product prefix on the call. A dry
#: pass is a preview (issue 25): each ending says what a real run WOULD do and where the intent was left.
SEED_PASS = """\
[2026-07-07T17:15:03.402Z] DRY-RUN WOULD reap stuck 'sending' intent 37 (email) -> needs_human; left sending
[2026-07-07T17:15:03.418Z] dispatch intent 44 action_type='note' tier='reversible' dry=true
[2026-07-07T17:15:03.421Z] DRY-RUN note->files_write ~/Desktop/wiki/wiki/operator/note-2026-07-07-44-…md:
                             WOULD call files_write({"path":"…","content":"…","mode":"create"})
[2026-07-07T17:15:03.430Z] intent 44 -> would be sent (reversible, dry-run); left ready
[2026-07-07T17:15:03.437Z] REFUSED external intent 45 (email): not approved+linked (pre=ready); left pending
[2026-07-07T17:15:03.444Z] dispatch intent 41 action_type='spend' tier='spend' dry=true
[2026-07-07T17:15:03.446Z] DRY-RUN spend->notify+handoff: WOULD notify the person to purchase manually: …
[2026-07-07T17:15:03.455Z] intent 41 -> would be completed (spend, dry-run); left approved
[2026-07-07T17:15:03.461Z] no executor for action_type='wire_transfer' (intent 46); a real run would route \
it to needs_human; left approved
[2026-07-07T17:15:03.470Z] tick done: considered=4 executed=2 skipped=2 failed=0 handoff=1 dry=true
"""
_NORMALISE = [
    (re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] ", re.M), "[TS] "),
    (re.compile(r"intent \d+"), "intent N"),
    (re.compile(r"files_write \S+md:$", re.M), "files_write PATH:"),
    (re.compile(r"files_write\(\{.*\}\)"), "files_write({...})"),
    (re.compile(r"purchase manually: .*"), "purchase manually: ..."),
]


def normalise(text: str) -> list[str]:
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    return text.splitlines()


def stage(
    store: Store,
    action_type: str,
    *,
    verdict: Verdict,
    now: datetime = NOW,
    approve: bool = False,
    recipient: str = "",
    payload: Mapping[str, Any] | None = None,
    title: str = "",
) -> Intent:
    """Stage an intent and take it as far as its verdict allows: ready, or approved if ``approve``."""
    spec = handler_for(action_type)
    made = store.stage_intent(
        P,
        NewIntent(
            action_type,
            title or f"{action_type} it",
            recipient=recipient,
            payload=dict(payload or {}),
            tier=spec.tier if spec else Tier.EXTERNAL,
        ),
        now=now,
    )
    store.record_verdict(P, made.id, verdict, [f"test: {verdict}"], now=now)
    if verdict is Verdict.ALLOWED:
        store.mark_ready(P, made.id, now=now)
    elif verdict is Verdict.REQUIRES_APPROVAL and approve:
        store.decide(P, made.id, DecisionKind.APPROVE, by="person", now=now)
    return store.get_intent(P, made.id)


def tick(
    store: Store,
    clock: FakeClock,
    tmp_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    options: Mapping[str, object] | None = None,
    settings: Settings | None = None,
) -> list[str]:
    """One executor tick in-process; its log lines."""
    lines: list[str] = []
    settings = settings or Settings(handlers={"notesDir": str(tmp_path / "notes")})
    code = run_tick(
        "executor",
        store=store,
        profile=P,
        settings=settings,
        env=env if env is not None else {},
        clock=clock,
        log=lines.append,
        options=options or {},
    )
    assert code == 0, lines
    return lines


@pytest.fixture
def store() -> Iterator[Store]:
    """A ``memory://`` store with the profile."""
    made = open_store("memory://")
    made.create_profile(P, now=NOW - timedelta(days=30))
    yield made
    made.close()


@pytest.fixture
def at_now(clock: FakeClock) -> FakeClock:
    clock.set(NOW)
    return clock


def cli_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "config.toml").write_text(f'[handlers]\nnotesDir = "{tmp_path / "notes"}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite://{tmp_path / 'store.db'}", TICKLOOP_CONFIG=str(tmp_path / "config.toml")
    )
    return env


def test_the_seeds_dry_pass_is_reproduced_line_for_line(tmp_path: Path) -> None:
    """`tickloop operator tick executor --dry-run` on the seed's intents prints the seed's lines."""
    now = datetime.now(UTC)
    url = f"sqlite://{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_profile(P, now=now - timedelta(days=1))
        stuck = stage(store, "email", verdict=Verdict.REQUIRES_APPROVAL, approve=True, now=now,
                      recipient="person@example.com")  # fmt: skip
        [claimed] = store.claim_intents(P, owner="dead-executor", now=now - timedelta(hours=1), limit=1)
        store.mark_sending(P, claimed.id, owner="dead-executor", now=now - timedelta(hours=1))
        note = stage(store, "note", verdict=Verdict.ALLOWED, now=now, payload={"body": "remember"})
        email = stage(store, "email", verdict=Verdict.ALLOWED, now=now, recipient="person@example.com")
        spend = stage(store, "spend", verdict=Verdict.REQUIRES_APPROVAL, approve=True, now=now,
                      payload={"amount": 12, "vendor": "shop"})  # fmt: skip
        wire = stage(store, "wire_transfer", verdict=Verdict.REQUIRES_APPROVAL, approve=True, now=now)
    ran = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "tick", "executor", "--dry-run"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert normalise(ran.stderr) == normalise(SEED_PASS)
    assert f"intent {note.id} -> would be sent" in ran.stderr
    with open_store(url) as store:
        status = {i.id: i.status for i in store.list_intents(P)}
        assert status == {  # a dry pass changes no intent's status
            stuck.id: IntentStatus.SENDING,
            note.id: IntentStatus.READY,
            email.id: IntentStatus.READY,
            spend.id: IntentStatus.APPROVED,
            wire.id: IntentStatus.APPROVED,
        }
        assert store.get_intent(P, spend.id).handoff is False
        assert store.get_intent(P, note.id).result["preview"]["would"] == "sent"  # type: ignore[index]
        [audit] = store.list_notifications(P)
        assert (audit.kind, audit.intent_id) == ("tier_floor_refused", email.id)
        [row] = store.recent_progress(P, tick_kind="executor")
        assert row.outcome is Outcome.DONE
        assert "considered=4 executed=2 skipped=2 failed=0 handoff=1 dry=true reaped=0" in row.detail
    assert not (tmp_path / "notes").exists()  # dry: nothing written


# -- the tier x verdict grid ------------------------------------------------------------------------

#: (action type, payload, gate verdict, what a dry pass says it WOULD do, the same after approval);
#: None: the pass does not consider it (not ready or approved).
GRID: list[tuple[str, dict[str, Any], Verdict, str | None, str | None]] = [
    ("note", {}, Verdict.ALLOWED, "sent", None),
    # a reversible type gated by the money rule is held; the tier does not override the verdict
    ("note", {"amount": 5}, Verdict.REQUIRES_APPROVAL, None, "sent"),
    ("note", {}, Verdict.BLOCKED, None, None),
    # an allowed, ready external intent is refused by the tier floor and left ready
    ("email", {"body": "hi"}, Verdict.ALLOWED, "refuse", None),
    ("email", {"body": "hi"}, Verdict.REQUIRES_APPROVAL, None, "sent"),
    ("email", {"body": "hi"}, Verdict.BLOCKED, None, None),
    # unreachable through the gate (money needs approval); if it ever arose, the floor refuses it
    ("spend", {"amount": 5}, Verdict.ALLOWED, "refuse", None),
    ("spend", {"amount": 5}, Verdict.REQUIRES_APPROVAL, None, "completed"),
    ("spend", {"amount": 5}, Verdict.BLOCKED, None, None),
]


def _would(store: Store, intent_id: int) -> str | None:
    result = store.get_intent(P, intent_id).result or {}
    return result.get("preview", {}).get("would")


@pytest.mark.parametrize(
    ("action_type", "payload", "verdict", "first", "after_approval"),
    GRID,
    ids=[f"{row[0]}-{row[2]}{'-money' if row[1] and row[0] == 'note' else ''}" for row in GRID],
)
def test_every_cell_of_the_tier_verdict_grid(
    store: Store,
    at_now: FakeClock,
    tmp_path: Path,
    action_type: str,
    payload: dict[str, Any],
    verdict: Verdict,
    first: str | None,
    after_approval: str | None,
) -> None:
    """Each (tier, verdict) cell previews where Figure 8 puts it (held, refused, fired or never), and
    the dry pass leaves the intent's status where it was."""
    settings = Settings(
        handlers={"notesDir": str(tmp_path / "notes")},
        smtp={"host": "127.0.0.1", "port": 2525, "security": "plain", "senders": ["op@example.com"]},
    )
    intent = stage(store, action_type, verdict=verdict, payload=payload, recipient=_recipient(action_type))
    tick(store, at_now, tmp_path, settings=settings)
    assert store.get_intent(P, intent.id).status is intent.status
    assert _would(store, intent.id) == first
    if after_approval is not None:
        store.decide(P, intent.id, DecisionKind.APPROVE, by="person", now=NOW)
        tick(store, at_now, tmp_path, settings=settings)
        assert store.get_intent(P, intent.id).status is IntentStatus.APPROVED
        assert _would(store, intent.id) == after_approval
    if verdict is Verdict.BLOCKED:
        with pytest.raises(ConflictError, match="blocked"):
            store.decide(P, intent.id, DecisionKind.APPROVE, by="person", now=NOW)
        with pytest.raises((ConflictError, TransitionError)):
            store.finish_intent(P, intent.id, IntentStatus.SENT, owner="anyone", now=NOW)
        assert store.get_intent(P, intent.id).status is IntentStatus.BLOCKED


def _recipient(action_type: str) -> str:
    return "person@example.com" if action_type == "email" else ""


def test_the_gate_holds_money_and_irreversibility_whatever_the_tier() -> None:
    """A reversible type with an amount, or listed irreversible, is not allowed: the gate's verdict stands."""
    gate = GateSettings(allow=["email", "spend"])
    assert judge(Proposal("note", Tier.REVERSIBLE, payload={"amount": 3}), gate).verdict is (
        Verdict.REQUIRES_APPROVAL
    )
    assert judge(Proposal("workspace_task", Tier.REVERSIBLE), GateSettings()).verdict is (
        Verdict.REQUIRES_APPROVAL
    )
    assert judge(Proposal("spend", Tier.SPEND, payload={"amount": 3}), gate).verdict is (
        Verdict.REQUIRES_APPROVAL
    )


def test_the_approve_command_refuses_a_blocked_intent(tmp_path: Path) -> None:
    """`tickloop operator approve` on a blocked intent exits 2, says it is blocked, and changes nothing."""
    url = f"sqlite://{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_profile(P, now=NOW)
        blocked = stage(store, "wire_transfer", verdict=Verdict.BLOCKED)
    ran = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "approve", str(blocked.id)],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 2
    assert "blocked" in ran.stderr
    with open_store(url) as store:
        assert store.get_intent(P, blocked.id).status is IntentStatus.BLOCKED
        assert store.get_intent(P, blocked.id).decision_id is None


# -- dry-run, arming, endings, the window ----------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "flag", "dry"),
    [
        ({}, False, True),
        ({"TICKLOOP_DRY_RUN": "false"}, False, True),
        ({"TICKLOOP_DRY_RUN": "0 "}, False, True),
        ({"TICKLOOP_DRY_RUN": "00"}, False, True),
        ({"TICKLOOP_DRY_RUN": ""}, False, True),
        ({"TICKLOOP_DRY_RUN": "1"}, False, True),
        ({"TICKLOOP_DRY_RUN": "0"}, True, True),
        ({"TICKLOOP_DRY_RUN": "0"}, False, False),
    ],
)
def test_only_the_exact_string_0_arms_the_executor(
    store: Store, at_now: FakeClock, tmp_path: Path, env: dict[str, str], flag: bool, dry: bool
) -> None:
    """A note file is written only with TICKLOOP_DRY_RUN exactly "0" and no --dry-run; dry, it is not."""
    intent = stage(store, "note", verdict=Verdict.ALLOWED, title="armed or not")
    lines = tick(store, at_now, tmp_path, env=env, options={"dry_run": flag})
    assert store.get_intent(P, intent.id).status is (IntentStatus.READY if dry else IntentStatus.SENT)
    assert store.get_intent(P, intent.id).dry_run is dry
    written = list((tmp_path / "notes").glob("note-*.md")) if (tmp_path / "notes").exists() else []
    assert len(written) == (0 if dry else 1)
    assert lines[-1].endswith(f"dry={'true' if dry else 'false'}")
    assert any(line.startswith("DRY-RUN note->") for line in lines) is dry
    assert store.get_intent(P, intent.id).result["dry_run"] is dry  # type: ignore[index]


def test_an_exception_in_the_side_effect_zone_ends_needs_human_and_is_never_retried(
    store: Store, at_now: FakeClock, tmp_path: Path
) -> None:
    """A note whose directory cannot be created raises mid-effect: needs_human, and no later pass retries."""
    (tmp_path / "notes").write_text("a file where the notes directory should be")
    intent = stage(store, "note", verdict=Verdict.ALLOWED)
    lines = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    assert store.get_intent(P, intent.id).status is IntentStatus.NEEDS_HUMAN
    assert any(f"intent {intent.id} -> needs_human (reversible)" in line for line in lines)
    assert lines[-1].startswith("tick done: considered=1 executed=0 skipped=0 failed=1")
    again = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    assert again[-1].startswith("tick done: considered=0")
    assert store.recent_progress(P, limit=1)[0].outcome is Outcome.NOOP


def test_a_handler_refusal_ends_failed_with_the_reason(
    store: Store, at_now: FakeClock, tmp_path: Path
) -> None:
    """A note whose body is not text is refused before anything happens: failed, reason recorded."""
    intent = stage(store, "note", verdict=Verdict.ALLOWED, payload={"body": 5})
    tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    ended = store.get_intent(P, intent.id)
    assert ended.status is IntentStatus.FAILED
    assert "payload.body" in ended.result["refused"]  # type: ignore[index]


def test_the_reaper_leaves_a_fresh_claim_alone(store: Store, at_now: FakeClock, tmp_path: Path) -> None:
    """A claim in `sending` younger than the threshold is a live tick: untouched; an old one is reaped."""
    fresh = stage(store, "note", verdict=Verdict.ALLOWED)
    store.claim_intents(P, owner="live", now=NOW - timedelta(minutes=5), limit=1)
    store.mark_sending(P, fresh.id, owner="live", now=NOW)
    old = stage(store, "note", verdict=Verdict.ALLOWED)
    store.claim_intents(P, owner="dead", now=NOW - timedelta(minutes=16), limit=1)
    store.mark_sending(P, old.id, owner="dead", now=NOW)
    lines = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    assert store.get_intent(P, fresh.id).status is IntentStatus.SENDING
    assert store.get_intent(P, old.id).status is IntentStatus.NEEDS_HUMAN
    assert lines[0] == f"REAPED stuck 'sending' intent {old.id} (note) -> needs_human"


def test_the_window_is_today_and_yesterday_and_day_picks_one(
    store: Store, at_now: FakeClock, tmp_path: Path
) -> None:
    """By default intents of today and yesterday are considered; `--day` takes that day's only."""
    old = stage(store, "note", verdict=Verdict.ALLOWED, now=NOW - timedelta(days=3), title="old")
    yesterday = stage(store, "note", verdict=Verdict.ALLOWED, now=NOW - timedelta(days=1), title="y")
    today = stage(store, "note", verdict=Verdict.ALLOWED, title="today")
    armed = {"TICKLOOP_DRY_RUN": "0"}
    tick(store, at_now, tmp_path, env=armed)
    assert [store.get_intent(P, i.id).status for i in (old, yesterday, today)] == [
        IntentStatus.READY,
        IntentStatus.SENT,
        IntentStatus.SENT,
    ]
    late = stage(store, "note", verdict=Verdict.ALLOWED, title="late")
    lines = tick(store, at_now, tmp_path, env=armed, options={"day": (NOW - timedelta(days=3)).date()})
    assert store.get_intent(P, old.id).status is IntentStatus.SENT
    assert store.get_intent(P, late.id).status is IntentStatus.READY  # claimed, then given back
    assert lines[-1].startswith("tick done: considered=1 executed=1")


def test_a_misconfigured_section_fails_the_tick_before_any_claim(
    store: Store, at_now: FakeClock, tmp_path: Path
) -> None:
    """A bad [executor] table fails the tick with the key named, and no intent is claimed."""
    intent = stage(store, "note", verdict=Verdict.ALLOWED)
    code = run_tick(
        "executor",
        store=store,
        profile=P,
        settings=Settings(executor={"batch": 0}),
        env={},
        clock=at_now,
        log=lambda _line: None,
    )
    assert code == 1
    [row] = store.recent_progress(P)
    assert row.outcome is Outcome.FAILED
    assert "[executor]" in row.error
    assert "batch" in row.error
    assert store.get_intent(P, intent.id).status is IntentStatus.READY


def test_an_ending_the_reaper_got_to_first_is_skipped(
    store: Store, at_now: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the reaper routes the claim to needs_human mid-effect, the executor skips it and keeps going."""
    from tickloop.operator.handlers import HandlerResult, HandlerStatus, registry  # noqa: PLC0415

    def slow_note(request: HandlerRequest, _context: HandlerContext) -> HandlerResult:
        # A concurrent reaper with a cutoff after this claim, as if the effect took too long.
        store.reap_stuck(cutoff=NOW + timedelta(hours=1), now=NOW, profile=P)
        return HandlerResult(HandlerStatus.SENT, "files_write", "x", "called files_write()", False)

    monkeypatch.setattr(registry, "HANDLERS", {"note": HandlerSpec(Tier.REVERSIBLE, slow_note)})
    reaped = stage(store, "note", verdict=Verdict.ALLOWED)
    lines = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    assert store.get_intent(P, reaped.id).status is IntentStatus.NEEDS_HUMAN
    assert f"intent {reaped.id}: no longer ours to finish (reaped?); skipped" in lines
    assert lines[-1] == "tick done: considered=1 executed=0 skipped=1 failed=0 handoff=0 dry=false"


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_each_effect_starts_after_its_sending_and_every_earlier_ending_are_committed(
    backend: str,
    at_now: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """Seen from another connection while a handler runs, its intent is committed as `sending`, the
    pass's earlier intents are committed as ended, and no other intent is in `sending`."""
    from tickloop.operator.handlers import HandlerResult, HandlerStatus, registry  # noqa: PLC0415

    url = f"sqlite://{tmp_path / 'store.db'}" if backend == "sqlite" else request.getfixturevalue("pg_url")
    store, watcher = open_store(url), open_store(url, migrate=False)
    store.create_profile(P, now=NOW - timedelta(days=30))
    seen: dict[int, dict[int, IntentStatus]] = {}

    def probe(call: HandlerRequest, _context: HandlerContext) -> HandlerResult:
        seen[call.intent_id] = {i.id: i.status for i in watcher.list_intents(P)}
        return HandlerResult(HandlerStatus.SENT, "probe", "x", "called probe()", False)

    monkeypatch.setattr(registry, "HANDLERS", {"note": HandlerSpec(Tier.REVERSIBLE, probe)})
    first, second, third = (stage(store, "note", verdict=Verdict.ALLOWED).id for _ in range(3))
    unknown = stage(store, "wire_transfer", verdict=Verdict.ALLOWED).id
    last = stage(store, "note", verdict=Verdict.ALLOWED).id
    lines = tick(
        store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"}, settings=Settings(executor={"batch": 2})
    )
    notes = [first, second, third, last]
    assert list(seen) == notes
    for k, note in enumerate(notes):
        sending = {i for i, status in seen[note].items() if status is IntentStatus.SENDING}
        assert sending == {note}
        assert {seen[note][earlier] for earlier in notes[:k]} <= {IntentStatus.SENT}
    assert [store.get_intent(P, i).status for i in (*notes, unknown)] == [IntentStatus.SENT] * 4 + [
        IntentStatus.NEEDS_HUMAN  # no executor for its type: the person's, once
    ]
    assert lines[-1] == "tick done: considered=5 executed=4 skipped=1 failed=0 handoff=0 dry=false"
    watcher.close()
    store.close()


def _at_every_status(store: Store) -> dict[int, IntentStatus]:
    """One intent at each status the machine can reach, claims old enough to be reaped or released."""
    old = NOW - timedelta(hours=2)
    made: dict[IntentStatus, int] = {}
    made[S.PROPOSED] = store.stage_intent(P, NewIntent("note", "p"), now=NOW).id
    allowed = store.stage_intent(P, NewIntent("note", "a"), now=NOW).id
    made[S.ALLOWED] = store.record_verdict(P, allowed, Verdict.ALLOWED, ["t"], now=NOW).id
    made[S.REQUIRES_APPROVAL] = stage(
        store, "email", verdict=Verdict.REQUIRES_APPROVAL, recipient="a@b.org"
    ).id
    made[S.BLOCKED] = stage(store, "note", verdict=Verdict.BLOCKED).id
    denied = stage(store, "email", verdict=Verdict.REQUIRES_APPROVAL, recipient="a@b.org").id
    store.decide(P, denied, DecisionKind.DENY, by="person", now=NOW)
    made[S.DENIED] = denied
    for status in (S.CLAIMED, S.SENDING, S.SENT, S.COMPLETED, S.FAILED, S.NEEDS_HUMAN):
        intent = stage(store, "note", verdict=Verdict.ALLOWED, title=str(status))
        [claimed] = store.claim_intents(P, owner="gone", now=old, limit=1)
        assert claimed.id == intent.id
        if status is not S.CLAIMED:
            store.mark_sending(P, intent.id, owner="gone", now=old)
        if status not in (S.CLAIMED, S.SENDING):
            store.finish_intent(P, intent.id, status, owner="gone", now=old)
        made[status] = intent.id
    made[S.READY] = stage(store, "note", verdict=Verdict.ALLOWED).id
    made[S.APPROVED] = stage(store, "wire_transfer", verdict=Verdict.REQUIRES_APPROVAL, approve=True).id
    assert set(made) == set(IntentStatus)
    return {intent_id: status for status, intent_id in made.items()}


def test_a_dry_pass_over_every_status_leaves_every_status_unchanged(
    store: Store, at_now: FakeClock, tmp_path: Path
) -> None:
    """Dry, nothing moves: not a ready or approved intent, not an unknown type, not a stale claim
    or a stuck `sending` (the reaper only says what it WOULD do); an armed pass then acts."""
    before = _at_every_status(store)
    lines = tick(store, at_now, tmp_path)
    assert {i.id: i.status for i in store.list_intents(P)} == before
    assert not (tmp_path / "notes").exists()
    assert any(line.startswith("DRY-RUN WOULD reap stuck 'sending'") for line in lines)
    assert any(line.startswith("DRY-RUN WOULD release stale claim") for line in lines)
    armed = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    after = {i.id: i.status for i in store.list_intents(P)}
    moved = {before[i] for i in after if after[i] is not before[i]}
    assert moved == {S.SENDING, S.CLAIMED, S.READY, S.APPROVED}, armed
    unknown = next(i for i, s in before.items() if s is S.APPROVED)
    assert after[unknown] is S.NEEDS_HUMAN  # no executor for its type: the person's, once, with a reason
    assert "no executor for action_type='wire_transfer'" in store.get_intent(P, unknown).result["reason"]  # type: ignore[index]
    again = tick(store, at_now, tmp_path, env={"TICKLOOP_DRY_RUN": "0"})
    assert not any("wire_transfer" in line for line in again)  # once: never logged again
