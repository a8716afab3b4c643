"""The stall monitor's pass: read every profile's loop statistics (set-based, twice), advance each
condition with ``conditions.step``, and send what it says through the attention layer.

Its only side effects are notifications (and their log) and its own condition state. A pass never
raises: ``run_monitor`` catches everything, records it where it can (stderr through ``log``; the store
if reachable; a small state file otherwise), and backs off for ``error_backoff_min`` before the next
pass. A failed delivery leaves ``last_notified_at`` unset, so the next run retries it; nothing loops.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import msgspec

from tickloop.config import Settings
from tickloop.errors import NotFoundError
from tickloop.operator.attention import Candidate, Kind
from tickloop.operator.conditions import (
    Condition,
    LoopStats,
    Memory,
    MonitorSettings,
    Notice,
    NoticeKind,
    detect,
    flagged_filter,
    step,
)
from tickloop.operator.domain import ConditionState
from tickloop.operator.notices import Notifier, dashboard_link, profile_section, validate_profile_overrides
from tickloop.operator.ping import PingEvent, ping
from tickloop.operator.store import Store

#: how sure the monitor is that a firing condition deserves the person's attention (above tau* 0.8).
FIRE_SCORE = 0.9
STATE_FILE = "monitor-state.json"

Log = Callable[[str], None]


class PassReport(msgspec.Struct):
    """What one pass did."""

    profiles: int = 0  #: profiles the store flagged as worth a look (a healthy one is not read)
    notices: list[tuple[str, Notice, bool]] = msgspec.field(default_factory=list)  #: (profile, notice, sent)
    errors: list[str] = msgspec.field(default_factory=list)


def monitor_pass(
    store: Store,
    settings: Settings,
    *,
    now: datetime,
    env: Mapping[str, str],
    profiles: Sequence[str] | None = None,
    notifier_for: Callable[[str], Notifier] | None = None,
) -> PassReport:
    """One pass over ``profiles`` (None: all). Errors in one profile are reported, not raised."""
    report = PassReport()
    for name in profiles or ():
        try:
            store.get_profile(name)
        except NotFoundError as exc:
            report.errors.append(exc.message)
    overrides = {name: _settings(settings, name) for name in settings.profiles}
    default = profile_section(settings, "", "monitor", MonitorSettings)
    window = 1 + max(max(s.stuck_streak, s.board_frozen_ticks) for s in [default, *overrides.values()])

    def monitor_settings(profile: str) -> MonitorSettings:
        return overrides.get(profile, default)

    flagged = flagged_filter([default, *overrides.values()], now=now)
    first = store.loop_stats(profiles, window=window, flagged=flagged)
    report.profiles = len(first)
    memory: dict[str, dict[str, ConditionState]] = {}
    for state in store.list_conditions(sorted(first)) if first else ():
        memory.setdefault(state.profile, {})[state.name] = state
    found = {p: detect(stats, now=now, settings=monitor_settings(p)) for p, stats in first.items()}
    # A profile with nothing holding on the first read and nothing active in memory cannot change
    # state this pass, whatever the second read says (step needs both reads to agree), so only the
    # others are read again: still one query.
    again = sorted(p for p in first if found[p] or any(m.active for m in memory.get(p, {}).values()))
    second = store.loop_stats(again, window=window, flagged=flagged) if again else {}
    make = notifier_for or (lambda p: Notifier(store, p, settings, env))
    for profile in again:
        try:
            _advance(
                store,
                profile,
                first=found[profile],
                second=_detect(second.get(profile), now, monitor_settings(profile)),
                memory=memory.get(profile, {}),
                now=now,
                settings=monitor_settings(profile),
                notifier=make(profile),
                report=report,
            )
        except Exception as exc:  # noqa: BLE001  (one profile's failure must not stop the others)
            _profile_failed(store, profile, exc, report, now=now)
    # A clean pass writes no condition: this row is how the dashboard tells it from "never ran".
    store.record_monitor_pass(profiles, now=now)
    return report


def _profile_failed(store: Store, profile: str, exc: Exception, report: PassReport, *, now: datetime) -> None:
    """One profile's failure: reported, and recorded in its notification log where it can be."""
    message = f"{type(exc).__name__}: {exc}"
    report.errors.append(f"profile {profile!r}: {message}")
    with contextlib.suppress(Exception):  # recorded where it can be; stderr has it anyway
        store.log_notification(
            profile, channel="monitor", kind="monitor.error", subject=message[:200], body=message, now=now
        )


def _settings(settings: Settings, profile: str) -> MonitorSettings:
    return profile_section(settings, profile, "monitor", MonitorSettings)


def _detect(stats: LoopStats | None, now: datetime, settings: MonitorSettings) -> dict[Condition, str]:
    return {} if stats is None else detect(stats, now=now, settings=settings)


def _advance(
    store: Store,
    profile: str,
    *,
    first: Mapping[Condition, str],
    second: Mapping[Condition, str],
    memory: Mapping[str, ConditionState],
    now: datetime,
    settings: MonitorSettings,
    notifier: Notifier,
    report: PassReport,
) -> None:
    for condition in Condition:
        stored = memory.get(condition.value)
        before = _memory(stored)
        after, notice = step(
            condition,
            before,
            first_read=first.get(condition),
            second_read=second.get(condition),
            now=now,
            cooldown=settings.cooldown(condition),
        )
        sent = False
        if notice is not None:
            sent = _send(notifier, profile, notice, now=now)
            report.notices.append((profile, notice, sent))
            if sent and notice.kind is NoticeKind.FIRE:
                after = Memory(after.active, after.since, now)
        if after != before:
            store.put_condition(
                profile,
                condition.value,
                active=after.active,
                since=after.since,
                last_notified_at=after.last_notified_at,
                now=now,
            )


def _memory(state: ConditionState | None) -> Memory:
    if state is None:
        return Memory()
    return Memory(state.active, state.since, state.last_notified_at)


def _send(notifier: Notifier, profile: str, notice: Notice, *, now: datetime) -> bool:
    text = notice.text
    if notice.kind is NoticeKind.RECOVERY:
        kind = Kind.RECOVERY
    elif notice.condition is Condition.STUCK and text.startswith("waiting on your approval"):
        kind = Kind.APPROVAL  # reframed: the person's decision is the blocker, not a fault
    else:
        kind = Kind.NOTICE
    if kind is Kind.APPROVAL:
        link = dashboard_link(notifier.settings, profile)
        text = f"{text}\ndecide in the dashboard: {link}" if link else text
    title = f"tickloop [{profile}]: {notice.text}"
    candidate = Candidate(kind, title, score=FIRE_SCORE)
    source = f"monitor.{notice.condition.value}.{notice.kind.value}"
    return notifier.consider(candidate, now=now, source=source, body=text).sent


# -- the program around the pass: never raise, record, back off ----------------------------------------


def state_path(env: Mapping[str, str]) -> Path:
    """The back-off state file: ``$TICKLOOP_STATE_DIR`` or ``$XDG_STATE_HOME/tickloop``."""
    folder = env.get("TICKLOOP_STATE_DIR")
    if folder:
        return Path(folder) / STATE_FILE
    from tickloop.dirs import user_state_path  # noqa: PLC0415

    return user_state_path() / STATE_FILE


def backing_off(path: Path, now: datetime) -> datetime | None:
    """If a recent failure asked for a back-off that has not ended, when it ends."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        until = datetime.fromisoformat(str(data["until"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return until if until.tzinfo is not None and until > now else None


def _write_state(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)


def run_monitor(
    *,
    open_store: Callable[[], Store],
    load_settings: Callable[[], Settings],
    now: datetime,
    env: Mapping[str, str],
    profiles: Sequence[str] | None,
    log: Log,
) -> PassReport | None:
    """One monitor run as the CLI performs it. Never raises; None when it failed or backed off."""
    path = state_path(env)
    until = backing_off(path, now)
    if until is not None:
        log(f"monitor: backing off after an earlier failure until {until.isoformat()}")
        return None
    backoff = timedelta(minutes=MonitorSettings().error_backoff_min)
    store: Store | None = None
    beat = MonitorSettings()  # no pings until the settings are read
    try:
        settings = load_settings()
        beat = profile_section(settings, "", "monitor", MonitorSettings)
        backoff = timedelta(minutes=beat.error_backoff_min)
        _ping(beat, PingEvent.START, "", log)
        validate_profile_overrides(settings)  # a typo fails this run, not the first alert
        store = open_store()
        report = monitor_pass(store, settings, now=now, env=env, profiles=profiles)
    except Exception as exc:  # noqa: BLE001  (the monitor must never crash-loop)
        message = f"{type(exc).__name__}: {exc}"
        _failed(message, store, profiles, path, now, backoff, log)
        _ping(beat, PingEvent.FAIL, message, log)
        return None
    finally:
        if store is not None:
            _close(store)
    for error in report.errors:
        log(f"monitor: {error}")
    path.unlink(missing_ok=True)
    summary = f"{report.profiles} profile(s) flagged, {len(report.notices)} notice(s)"
    if report.errors:  # a profile the pass could not handle: the heartbeat says so
        _ping(beat, PingEvent.FAIL, "\n".join([summary, *report.errors]), log)
    else:
        _ping(beat, PingEvent.SUCCESS, summary, log)
    return report


def _ping(settings: MonitorSettings, event: PingEvent, body: str, log: Log) -> None:
    ping(settings.ping_url, event, timeout_s=settings.ping_timeout_s, body=body, log=log)


def _failed(  # noqa: PLR0917  (private; one call site)
    message: str,
    store: Store | None,
    profiles: Sequence[str] | None,
    path: Path,
    now: datetime,
    backoff: timedelta,
    log: Log,
) -> None:
    log(f"monitor: failed: {message}; backing off {int(backoff.total_seconds() // 60)} min")
    recorded = False
    if store is not None:
        try:
            for profile in profiles or [p.name for p in store.list_profiles()]:
                store.log_notification(
                    profile,
                    channel="monitor",
                    kind="monitor.error",
                    subject=message[:200],
                    body=message,
                    now=now,
                )
            recorded = True
        except Exception:  # noqa: BLE001, S110  (the store is what failed; the state file still records it)
            pass
    try:
        _write_state(
            path,
            {"failedAt": now.isoformat(), "until": (now + backoff).isoformat(), "error": message[:2000],
             "recordedInStore": recorded},
        )  # fmt: skip
    except OSError as exc:
        log(f"monitor: cannot write {path}: {exc}")


def _close(store: Store) -> None:
    # Closing a broken store must not turn into a crash.
    with contextlib.suppress(Exception):
        store.close()
