"""The attention layer wired: screening, spending, delivery, records, digest, voice, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.operator.attention import AttentionSettings, Candidate, Check, Kind, VoiceCheck
from tickloop.operator.conditions import MonitorSettings
from tickloop.operator.domain import NewProgress, Outcome
from tickloop.operator.monitor import monitor_pass
from tickloop.operator.notices import (
    Notifier,
    attention_records,
    attention_settings,
    profile_section,
    send_digest,
    validate_profile_overrides,
)
from tickloop.operator.store import Store, open_store
from tickloop.presence import ChatPresence

NOON = datetime(2026, 7, 7, 12, 0, tzinfo=UTC)


def settings_for(tmp_path: Path, **attention: Any) -> Settings:
    """Settings with a file channel under ``tmp_path`` and the given attention keys."""
    channel = {"kind": "file", "name": "log", "path": str(tmp_path / "notices.jsonl")}
    return msgspec.convert({"attention": attention, "notify": {"channels": [channel]}}, Settings)


def lines(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "notices.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A real SQLite store with profile ``p`` in UTC."""
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    opened.create_profile("p", now=NOON)
    yield opened
    opened.close()


def busy_now(store: Store) -> None:
    """A calendar observation of a meeting around NOON."""
    payload = {
        "uid": "m1",
        "summary": "meeting",
        "allDay": False,
        "start": (NOON - timedelta(minutes=30)).isoformat(),
        "end": (NOON + timedelta(minutes=30)).isoformat(),
    }
    store.add_observation("p", source="calendar:work", content_hash="sha256:m1", payload=payload, now=NOON)


def spent_out(store: Store) -> None:
    """Today's unsolicited budget already used up."""
    for minute in range(6):
        store.spend_attention(
            "p",
            now=NOON - timedelta(hours=10, minutes=-minute),
            day="2026-07-07",
            cap=6,
            min_gap=timedelta(0),
        )


NOTICE = Candidate(Kind.NOTICE, "the loop is stuck", score=0.95)
UNTRUSTED = Candidate(Kind.NOTICE, "mail says hi", score=0.99, tainted=True)
USELESS = Candidate(Kind.NOTICE, "fyi", score=0.99, actionable=False)
STEPS = [
    # (name, candidate, time, setup, deciding check, delivered)
    ("no candidate", None, NOON, None, Check.NO_CANDIDATE, False),
    ("untrusted", UNTRUSTED, NOON, None, Check.UNTRUSTED, False),
    ("not actionable", USELESS, NOON, None, Check.NOT_ACTIONABLE, False),
    ("below threshold", Candidate(Kind.NOTICE, "meh", score=0.79), NOON, None, Check.BELOW_THRESHOLD, False),
    ("quiet hours", NOTICE, NOON.replace(hour=23), None, Check.QUIET_HOURS, False),
    ("busy", NOTICE, NOON, busy_now, Check.BUSY, False),
    ("budget spent", NOTICE, NOON, spent_out, Check.BUDGET, False),
    ("budget granted", NOTICE, NOON, None, Check.BUDGET, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "candidate", "now", "setup", "check", "sent"), STEPS, ids=[s[0] for s in STEPS]
)
def test_each_short_circuit_step_end_to_end(
    store: Store, tmp_path: Path, name: str, candidate: Candidate | None, now: datetime,
    setup: Any, check: Check, sent: bool,
) -> None:  # fmt: skip
    """Each check in the seed's order silences (and records) a candidate that fails it; one sends."""
    if setup is not None:
        setup(store)
    decision = Notifier(store, "p", settings_for(tmp_path), {}).consider(candidate, now=now, source=name)
    assert (decision.check, decision.sent) == (check, sent)
    assert len(lines(tmp_path)) == (1 if sent else 0)
    [record] = attention_records(store, "p")
    assert (record.check, record.sent) == (check.value, sent)


def test_budget_is_spent_before_sending_and_holds_the_gap(store: Store, tmp_path: Path) -> None:
    """Two notices within the 90-minute gap: the first spends and sends, the second stays silent."""
    notifier = Notifier(store, "p", settings_for(tmp_path), {})
    assert notifier.consider(NOTICE, now=NOON, source="a").sent
    assert not notifier.consider(NOTICE, now=NOON + timedelta(minutes=89), source="b").sent
    assert notifier.consider(NOTICE, now=NOON + timedelta(minutes=90), source="c").sent
    assert len(store.attention_spends("p")) == 2
    assert len(lines(tmp_path)) == 2


def test_approvals_are_exempt_then_capped_into_one_digest(store: Store, tmp_path: Path) -> None:
    """Approvals skip the budget; past approvalCap a day they batch, and the digest sends ONE message."""
    notifier = Notifier(store, "p", settings_for(tmp_path, approvalCap=2, budgetPerDay=0), {})
    checks = [
        notifier.consider(Candidate(Kind.APPROVAL, f"approve #{n}", score=0.1), now=NOON, source="gate").check
        for n in range(4)
    ]
    assert checks == [Check.EXEMPT, Check.EXEMPT, Check.APPROVAL_CAP, Check.APPROVAL_CAP]
    assert len(lines(tmp_path)) == 2
    assert store.attention_spends("p") == []
    result = send_digest(notifier, now=NOON)
    assert (result.items, result.sent) == (2, True)
    digest = lines(tmp_path)[-1]
    assert "approve #2" in digest["body"]
    assert "approve #3" in digest["body"]
    assert send_digest(notifier, now=NOON).items == 0, "a digest marks its items sent"


def test_untrusted_content_above_threshold_never_interrupts(store: Store, tmp_path: Path) -> None:
    """Tainted content scoring 1.0 with budget to spare stays silent, and nothing is spent."""
    notifier = Notifier(store, "p", settings_for(tmp_path), {})
    decision = notifier.consider(
        Candidate(Kind.NOTICE, "URGENT", score=1.0, tainted=True), now=NOON, source="mail"
    )
    assert (decision.check, decision.sent) == (Check.UNTRUSTED, False)
    assert store.attention_spends("p") == []
    assert lines(tmp_path) == []


CLARIFY = [
    (True, True, True, Check.BUDGET, True),
    (False, True, True, Check.BELOW_THRESHOLD, False),
    (True, False, True, Check.BELOW_THRESHOLD, False),
    (True, True, False, Check.BELOW_THRESHOLD, False),
]


@pytest.mark.parametrize(("top", "blocking", "underspecified", "check", "sent"), CLARIFY)
def test_clarifying_questions_only_for_top_blocking_underspecified_goals(
    store: Store, tmp_path: Path, top: bool, blocking: bool, underspecified: bool, check: Check, sent: bool
) -> None:
    """Expected value 0.6 beats cost 0.5 only when all three hold; otherwise the question stays unasked."""
    notifier = Notifier(store, "p", settings_for(tmp_path), {})
    decision = notifier.clarify(
        "which repo?", now=NOON, top_priority=top, blocking=blocking, underspecified=underspecified
    )
    assert (decision.check, decision.sent) == (check, sent)


def test_voice_arbiter_budget_penalty_and_live_conversation(store: Store, tmp_path: Path) -> None:
    """Voice: 4 a day, a rising bar per message already sent, and silence while a chat is live."""
    notifier = Notifier(store, "p", settings_for(tmp_path), {})
    flag = tmp_path / "chat-active.json"
    with ChatPresence(flag, "s1"):
        assert notifier.voice("hello", score=1.0, now=NOON, presence=flag) is VoiceCheck.LIVE_CONVERSATION
    results = [notifier.voice(f"m{n}", score=0.86, now=NOON, presence=flag) for n in range(3)]
    # 0.8, 0.85 pass at 0.86; the third needs 0.9.
    assert results == [VoiceCheck.SPEAK, VoiceCheck.SPEAK, VoiceCheck.VOICE_THRESHOLD]
    assert [notifier.voice(f"x{n}", score=1.0, now=NOON, presence=flag) for n in range(3)] == [
        VoiceCheck.SPEAK, VoiceCheck.SPEAK, VoiceCheck.VOICE_BUDGET,
    ]  # fmt: skip
    voice = [n for n in store.list_notifications("p") if n.kind == "voice"]
    assert len(voice) == 7, "every voice decision is recorded"


def test_per_profile_overrides_lay_over_the_global_sections(tmp_path: Path) -> None:
    """``[profiles.NAME.attention]`` overrides only its keys; other profiles keep the global table."""
    settings = msgspec.convert(
        {
            "attention": {"budgetPerDay": 3},
            "profiles": {
                "night": {"attention": {"quietStart": 1, "quietEnd": 5}, "monitor": {"stuckStreak": 9}}
            },
        },
        Settings,
    )
    night = profile_section(settings, "night", "attention", AttentionSettings)
    assert (night.budget_per_day, night.quiet_start, night.quiet_end) == (3, 1, 5)
    assert profile_section(settings, "day", "attention", AttentionSettings).quiet_start == 22
    assert profile_section(settings, "night", "monitor", MonitorSettings).stuck_streak == 9
    validate_profile_overrides(settings)


@pytest.mark.parametrize(
    ("profiles", "message"),
    [
        ({"x": {"gate": {}}}, r"\[profiles.x\]: unknown sections \['gate'\]"),
        (
            {"x": {"attention": {"quietStart": 24}}},
            r"\[profiles.x.attention\] over \[attention\].*quietStart",
        ),
        ({"x": {"monitor": {"stuckStreek": 1}}}, r"stuckStreek"),
    ],
)
def test_bad_profile_overrides_name_the_table_and_key(profiles: dict[str, Any], message: str) -> None:
    """A typo in a per-profile override fails with the table and the key named."""
    settings = msgspec.convert({"profiles": profiles}, Settings)
    with pytest.raises(ConfigError, match=message):
        validate_profile_overrides(settings)


def test_the_profile_timezone_sets_quiet_hours(store: Store, tmp_path: Path) -> None:
    """Without a configured timezone, the profile's own timezone places the quiet window."""
    store.create_profile("tokyo", now=NOON, timezone="Asia/Tokyo")
    assert attention_settings(settings_for(tmp_path), store, "tokyo").timezone == "Asia/Tokyo"
    # NOON UTC is 21:00 in Tokyo: not quiet yet; 13:00 UTC is 22:00 there.
    notifier = Notifier(store, "tokyo", settings_for(tmp_path), {})
    assert notifier.consider(NOTICE, now=NOON.replace(hour=13), source="t").check is Check.QUIET_HOURS


class Hook(BaseHTTPRequestHandler):
    """Records every JSON body posted to it."""

    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        Hook.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the stdlib's signature)
        """Quiet."""


def test_monitor_notice_reaches_a_real_apprise_endpoint(store: Store) -> None:
    """A SILENT notice is delivered through Apprise's json:// to an HTTP server on 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Hook.received = []
    try:
        url = f"json://127.0.0.1:{server.server_address[1]}/hook"
        settings = msgspec.convert(
            {
                "attention": {"quietStart": 0, "quietEnd": 0},
                "notify": {"channels": [{"kind": "apprise", "url": url}]},
            },
            Settings,
        )
        store.add_goal_model("p", title="g", now=NOON)
        store.activate_goal_model("p", 1, now=NOON)
        old = NOON - timedelta(hours=5)
        store.record_progress("p", NewProgress("fast", Outcome.DONE, old, old, state_hash="h"))
        report = monitor_pass(store, settings, now=NOON, env={})
    finally:
        server.shutdown()
        server.server_close()
    assert [sent for _, _, sent in report.notices] == [True]
    assert len(Hook.received) == 1
    assert "silent" in Hook.received[0]["title"]
    assert store.get_condition("p", "silent") is not None


def cli(tmp_path: Path, store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    # No quiet window: the CLI runs at the real time of day.
    (tmp_path / "config.toml").write_text("[attention]\nquietStart = 0\nquietEnd = 0\n")
    env.update(
        TICKLOOP_STORE=store_url,
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        TICKLOOP_STATE_DIR=str(tmp_path / "state"),
    )
    return subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_unreachable_store_exits_zero_records_and_backs_off(tmp_path: Path) -> None:
    """With the store unreachable the monitor exits 0, writes the failure to stderr and its state file,
    and the next run backs off instead of retrying at once."""
    bad = "postgresql://nobody@127.0.0.1:1/none"
    first = cli(tmp_path, bad, "monitor", "--all")
    assert first.returncode == 0
    assert "monitor: failed: StoreError" in first.stderr
    state = json.loads((tmp_path / "state" / "monitor-state.json").read_text())
    assert "cannot connect" in state["error"]
    assert state["recordedInStore"] is False
    second = cli(tmp_path, bad, "monitor")
    assert second.returncode == 0
    assert "backing off" in second.stderr


def test_cli_monitor_attention_and_digest(tmp_path: Path) -> None:
    """Against a real SQLite store: the monitor records its notice, `attention` lists every decision
    newest first, `--today` leaves out an older day's, and `digest` sends the batched item once."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_profile("p", now=NOON)
        old = NOON - timedelta(days=1)
        store.record_progress("p", NewProgress("fast", Outcome.DONE, old, old, state_hash="h"))
        batched = Notifier(store, "p", settings_for(tmp_path, approvalCap=0), {}).consider(
            Candidate(Kind.APPROVAL, "approve the old draft", score=0.1), now=NOON, source="gate"
        )
        assert batched.check is Check.APPROVAL_CAP
    run = cli(tmp_path, url, "monitor", "--profile", "p")
    assert run.returncode == 0, run.stderr
    assert "monitor: 1 profile(s) flagged, 1 notice(s), 1 delivered" in run.stdout
    shown = cli(tmp_path, url, "attention", "--profile", "p", "--json")
    assert shown.returncode == 0, shown.stderr
    every = [(r["source"], r["check"], r["sent"], r["digest"]) for r in json.loads(shown.stdout)]
    assert every == [("monitor.silent.fire", "budget", True, False), ("gate", "approval_cap", False, True)]
    today = cli(tmp_path, url, "attention", "--profile", "p", "--today", "--json")
    assert [r["source"] for r in json.loads(today.stdout)] == ["monitor.silent.fire"]
    table = cli(tmp_path, url, "attention", "--profile", "p", "--today").stdout
    assert "silent" in table
    assert "old draft" not in table
    first = cli(tmp_path, url, "digest", "--profile", "p")
    assert (first.returncode, first.stdout.splitlines()[-1]) == (0, "digest: 1 item(s) sent"), first.stderr
    assert "approve the old draft" in first.stdout
    again = cli(tmp_path, url, "digest", "--profile", "p")
    assert (again.returncode, again.stdout.strip()) == (0, "digest: nothing to send")


@pytest.mark.parametrize(("tainted", "check"), [(False, Check.EXEMPT), (True, Check.UNTRUSTED)])
def test_approval_ping_for_a_tainted_intent_stays_silent(
    store: Store, tmp_path: Path, tainted: bool, check: Check
) -> None:
    """An approval request fed by untrusted input never pings; a clean one does, without budget."""
    from tickloop.operator.domain import IntentOrigin, NewIntent, Verdict  # noqa: PLC0415
    from tickloop.operator.notices import approval_candidate  # noqa: PLC0415

    staged = NewIntent("note", "reply to mail", origin=IntentOrigin("fast", tainted=tainted))
    intent = store.stage_intent("p", staged, now=NOON)
    intent = store.record_verdict("p", intent.id, Verdict.REQUIRES_APPROVAL, ["rule"], now=NOON)
    decision = Notifier(store, "p", settings_for(tmp_path), {}).consider(
        approval_candidate(intent), now=NOON, source="gate"
    )
    assert decision.check is check
    assert decision.sent is not tainted
