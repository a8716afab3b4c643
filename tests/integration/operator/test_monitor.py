"""The stall monitor end to end: real SQLite store, real file channel, the real monitor pass."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tickloop.config import Settings
from tickloop.operator.domain import NewProgress, Outcome
from tickloop.operator.monitor import monitor_pass
from tickloop.operator.notices import ATTENTION, Notifier, attention_records, send_digest
from tickloop.operator.store import Store, open_store

T0 = datetime(2026, 7, 7, 12, 0, tzinfo=UTC)
#: a quiet window of zero length, an unlimited budget: these tests are about the conditions.
OPEN_ATTENTION = {"quietStart": 0, "quietEnd": 0, "minGapMin": 0, "budgetPerDay": 1000}
#: silence far away, so it does not fire while a test advances the clock past other cooldowns.
NO_SILENCE = {"silentMinutes": 7 * 24 * 60}


def make_settings(tmp_path: Path, *, attention: dict[str, Any] | None = None, **monitor: Any) -> Settings:
    """Settings whose notices go to a JSON-lines file under ``tmp_path``."""
    return msgspec.convert(
        {
            "attention": OPEN_ATTENTION if attention is None else attention,
            "monitor": {**NO_SILENCE, **monitor},
            "notify": {
                "channels": [{"kind": "file", "name": "log", "path": str(tmp_path / "notices.jsonl")}]
            },
        },
        Settings,
    )


def delivered(tmp_path: Path) -> list[str]:
    """Subjects that reached the file channel, oldest first."""
    path = tmp_path / "notices.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["subject"] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A real SQLite store with profile ``p`` (active goal) at T0."""
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    opened.create_profile("p", now=T0)
    opened.add_goal_model("p", title="ship", now=T0)
    opened.activate_goal_model("p", 1, now=T0)
    yield opened
    opened.close()


def row(
    store: Store, at: datetime, outcome: Outcome = Outcome.NOOP, board: str = "", kind: str = "fast"
) -> None:
    store.record_progress("p", NewProgress(kind, outcome, at, at, state_hash=board or f"h{at.timestamp()}"))


@dataclass(frozen=True)
class Case:
    """How to make one condition hold and how to clear it."""

    name: str
    monitor: dict[str, int]
    hold: Callable[[Store], None]
    clear: Callable[[Store, datetime], None]
    cooldown_min: int


def _stuck(store: Store) -> None:
    for n in range(6):
        row(store, T0 - timedelta(minutes=6 - n))


def _silent(store: Store) -> None:
    row(store, T0 - timedelta(hours=4), Outcome.DONE)


def _no_goal(store: Store) -> None:
    # Retire the active goal (no Store operation does that alone): "onboarding never finished".
    with store._write() as tx:  # type: ignore[attr-defined]
        tx.run("retire_active_goal", profile="p", version=0)
    for n in range(2):
        row(store, T0 - timedelta(minutes=2 - n))


def _frozen(store: Store) -> None:
    for n in range(24):
        row(store, T0 - timedelta(minutes=24 - n), Outcome.DONE, board="same")


CASES = [
    Case("stuck", {}, _stuck, lambda s, at: row(s, at, Outcome.DONE), 360),
    Case("silent", {"silentMinutes": 180}, _silent, lambda s, at: row(s, at, Outcome.DONE), 180),
    Case(
        "no_goal",
        {},
        _no_goal,
        lambda s, at: s.activate_goal_model("p", 1, now=at),
        1440,
    ),
    Case("board_frozen", {}, _frozen, lambda s, at: row(s, at, Outcome.DONE, board="moved"), 720),
]


def sent_for(store: Store, condition: str) -> list[str]:
    """The notices of one condition that reached a channel: ``fire`` / ``recovery``, oldest first."""
    notes = store.list_notifications("p", limit=10_000)
    prefix = f"monitor.{condition}."
    return [
        n.kind.removeprefix(prefix)
        for n in reversed(notes)
        if n.channel == "log" and n.kind.startswith(prefix) and not n.body.startswith("delivery failed")
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_condition_fires_cools_down_and_recovers_once(store: Store, tmp_path: Path, case: Case) -> None:
    """Each condition: one notice, silence during its cooldown, a reminder after it, one recovery."""
    settings = make_settings(tmp_path, **case.monitor)
    case.hold(store)

    def run(at: datetime) -> None:
        report = monitor_pass(store, settings, now=at, env={})
        assert report.errors == []

    run(T0)
    assert sent_for(store, case.name) == ["fire"]
    run(T0 + timedelta(minutes=case.cooldown_min - 1))
    assert sent_for(store, case.name) == ["fire"], "a reminder before the cooldown ended"
    if case.name != "silent":  # silence keeps growing; the others hold as they are
        run(T0 + timedelta(minutes=case.cooldown_min))
        assert sent_for(store, case.name) == ["fire", "fire"]
    cleared = T0 + timedelta(minutes=case.cooldown_min + 1)
    case.clear(store, cleared)
    run(cleared)
    run(cleared + timedelta(minutes=5))
    notices = sent_for(store, case.name)
    assert notices.count("recovery") == 1
    assert notices[-1] == "recovery"
    state = store.get_condition("p", case.name)
    assert state is not None
    assert state.active is False


def test_silent_detects_a_loop_that_stopped_running(store: Store, tmp_path: Path) -> None:
    """A loop whose newest row is hours old is reported silent, though nothing else is wrong."""
    row(store, T0 - timedelta(hours=3, minutes=1), Outcome.DONE)
    monitor_pass(store, make_settings(tmp_path, silentMinutes=180), now=T0, env={})
    assert sent_for(store, "silent") == ["fire"]
    assert any("silent: no tick has recorded progress for 181 min" in s for s in delivered(tmp_path))


def test_a_loop_that_never_ran_is_not_silent(store: Store, tmp_path: Path) -> None:
    """A profile without any progress row is not reported silent (there is no loop to be down yet)."""
    monitor_pass(store, make_settings(tmp_path, silentMinutes=1), now=T0, env={})
    assert delivered(tmp_path) == []


def test_stuck_with_waiting_approvals_is_reframed(store: Store, tmp_path: Path) -> None:
    """Stuck while intents wait on the person reads 'waiting on your approval', not a fault."""
    from tickloop.operator.domain import NewIntent, Verdict  # noqa: PLC0415

    intent = store.stage_intent("p", NewIntent("note", "t"), now=T0)
    store.record_verdict("p", intent.id, Verdict.REQUIRES_APPROVAL, ["rule"], now=T0)
    _stuck(store)
    monitor_pass(store, make_settings(tmp_path), now=T0, env={})
    assert any("waiting on your approval: 1 intent(s)" in s for s in delivered(tmp_path))
    assert [r.kind for r in attention_records(store, "p")] == ["approval"]


class FlappingStore:
    """A real store where a tick records progress between the monitor's two reads of one pass."""

    def __init__(self, inner: Store, between: Callable[[], None]) -> None:
        self.inner, self.between, self.reads = inner, between, 0

    def loop_stats(self, profiles: Any = None, *, window: int, flagged: Any = None) -> Any:
        self.reads += 1
        if self.reads == 2:
            self.between()
        return self.inner.loop_stats(profiles, window=window, flagged=flagged)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_flapping_within_one_pass_sends_nothing(store: Store, tmp_path: Path) -> None:
    """A condition that holds on the first read and is gone on the second changes nothing."""
    _stuck(store)
    flapping = FlappingStore(store, lambda: row(store, T0, Outcome.DONE))
    monitor_pass(flapping, make_settings(tmp_path), now=T0, env={})  # type: ignore[arg-type]
    assert flapping.reads == 2
    assert delivered(tmp_path) == []
    assert store.get_condition("p", "stuck") is None


def test_failed_delivery_is_recorded_and_retried_next_run(store: Store, tmp_path: Path) -> None:
    """A channel that fails leaves the notice unsent; the next monitor run delivers it once."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    bad = make_settings(tmp_path)
    bad = msgspec.structs.replace(
        bad, notify={"channels": [{"kind": "file", "name": "log", "path": str(blocker / "x.jsonl")}]}
    )
    _stuck(store)
    report = monitor_pass(store, bad, now=T0, env={})
    assert [sent for _, _, sent in report.notices] == [False]
    failed = [n for n in store.list_notifications("p") if n.channel == "log"]
    assert failed
    assert failed[0].body.startswith("delivery failed")
    state = store.get_condition("p", "stuck")
    assert state is not None
    assert state.last_notified_at is None
    monitor_pass(store, make_settings(tmp_path), now=T0 + timedelta(minutes=15), env={})
    monitor_pass(store, make_settings(tmp_path), now=T0 + timedelta(minutes=30), env={})
    assert sent_for(store, "stuck") == ["fire"]


def test_quiet_hours_across_a_dst_change_hold_then_digest(store: Store, tmp_path: Path) -> None:
    """At 23:30 Berlin on the night clocks go forward, a notice is held until 07:00 local (05:00 UTC)."""
    attention = {"quietStart": 22, "quietEnd": 7, "minGapMin": 0, "timezone": "Europe/Berlin"}
    settings = make_settings(tmp_path, attention=attention)
    night = datetime(2026, 3, 28, 22, 30, tzinfo=UTC)  # 23:30 CET; at 02:00 it becomes 03:00 CEST
    row(store, night - timedelta(hours=4), Outcome.DONE)
    monitor_pass(store, make_with_silence(settings), now=night, env={})
    assert delivered(tmp_path) == []
    [record] = attention_records(store, "p")
    assert (record.check, record.sent) == ("quiet_hours", False)
    assert record.hold_until == datetime(2026, 3, 29, 5, 0, tzinfo=UTC).isoformat()
    notifier = Notifier(store, "p", settings, {})
    assert send_digest(notifier, now=datetime(2026, 3, 29, 4, 59, tzinfo=UTC)).items == 0
    result = send_digest(notifier, now=datetime(2026, 3, 29, 5, 0, tzinfo=UTC))
    assert (result.items, result.sent) == (1, True)
    assert len(delivered(tmp_path)) == 1
    assert send_digest(notifier, now=datetime(2026, 3, 29, 6, 0, tzinfo=UTC)).items == 0


def make_with_silence(settings: Settings) -> Settings:
    return msgspec.structs.replace(settings, monitor={**settings.monitor, "silentMinutes": 180})


def test_monitor_reads_only_the_named_profile(store: Store, tmp_path: Path) -> None:
    """``--profile`` scopes the pass: another profile's stuck loop is not reported."""
    store.create_profile("other", now=T0)
    _stuck(store)
    report = monitor_pass(store, make_settings(tmp_path), now=T0, env={}, profiles=["other"])
    assert report.profiles == 1
    assert delivered(tmp_path) == []
    assert ATTENTION not in {n.channel for n in store.list_notifications("p")}


def test_recovery_is_not_swallowed_by_the_minimum_gap(store: Store, tmp_path: Path) -> None:
    """With the shipped 90-minute gap, a condition that clears 10 minutes after firing still says so."""
    settings = make_settings(tmp_path, attention={"quietStart": 0, "quietEnd": 0})
    _stuck(store)
    monitor_pass(store, settings, now=T0, env={})
    row(store, T0 + timedelta(minutes=10), Outcome.DONE)
    monitor_pass(store, settings, now=T0 + timedelta(minutes=10), env={})
    assert sent_for(store, "stuck") == ["fire", "recovery"]
    assert len(store.attention_spends("p")) == 1, "only the firing notice spent budget"


def test_the_waiting_on_approval_notice_links_to_the_dashboard(store: Store, tmp_path: Path) -> None:
    """With `[web] baseUrl`, the "waiting on your approval" notice names the dashboard's approvals page."""
    from tickloop.operator.domain import NewIntent, Verdict  # noqa: PLC0415

    intent = store.stage_intent("p", NewIntent("note", "t"), now=T0)
    store.record_verdict("p", intent.id, Verdict.REQUIRES_APPROVAL, ["rule"], now=T0)
    _stuck(store)
    settings = msgspec.structs.replace(make_settings(tmp_path), web={"baseUrl": "https://ops.example:8765"})
    monitor_pass(store, settings, now=T0, env={})
    lines = [
        json.loads(line) for line in (tmp_path / "notices.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert any("https://ops.example:8765/p/p/approvals" in line.get("body", "") for line in lines)
