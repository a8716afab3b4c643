"""``tickloop doctor``: check configuration, store, model, channels, clock and dry-run; explain fixes.

Each check returns ``Finding``s; none raises. Only ``send_test=True`` sends anything (one test
notification per channel); the model check makes one tiny request.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tickloop.config import Settings, load_settings, secret, section
from tickloop.errors import TickloopError

if TYPE_CHECKING:
    from tickloop.notify.base import DeliveryResult
    from tickloop.operator.store.base import Store


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's result: what was checked, whether it is fine, what was seen, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    #: not checked, because an earlier check failed (shown as such; not a problem of its own)
    skipped: bool = False


def run_checks(env: Mapping[str, str], *, now: datetime, send_test: bool = False) -> list[Finding]:
    """Every check, in order; a failing step never stops the rest."""
    try:
        settings = load_settings(env)
    except TickloopError as exc:
        return [Finding("config", ok=False, detail=str(exc), fix="fix the file or variable it names")]
    findings = [Finding("config", ok=True, detail="settings load")]
    findings += _sections(settings)
    findings += _store(settings, now)
    findings += _model(settings, env)
    findings += _channels(settings, env, send_test=send_test)
    findings.append(_dry_run(env))
    return findings


def _guard(name: str, check: Callable[[], Finding], fix: str) -> Finding:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001  (a doctor reports every problem, it never crashes)
        return Finding(name, ok=False, detail=f"{type(exc).__name__}: {exc}", fix=fix)


def _sections(settings: Settings) -> list[Finding]:
    from tickloop.notify.settings import parse_notify_settings  # noqa: PLC0415
    from tickloop.notify.smtp import parse_smtp_settings  # noqa: PLC0415

    typed: dict[str, Callable[[], object]] = {
        **_operator_sections(settings),
        "smtp": lambda: parse_smtp_settings(settings.smtp),
        "notify": lambda: parse_notify_settings(settings.notify),
    }

    def check(name: str, parse: Callable[[], object]) -> Finding:
        parse()
        return Finding(f"config [{name}]", ok=True, detail="valid")

    return [
        _guard(f"config [{n}]", lambda n=n, p=p: check(n, p), f"fix the [{n}] table")  # type: ignore[misc]
        for n, p in typed.items()
    ]


def _operator_sections(settings: Settings) -> dict[str, Callable[[], object]]:
    """The operator's tables, each with the parse that checks it."""
    from tickloop.operator.attention import AttentionSettings  # noqa: PLC0415
    from tickloop.operator.conditions import MonitorSettings  # noqa: PLC0415
    from tickloop.operator.gate import GateSettings  # noqa: PLC0415
    from tickloop.operator.handlers.settings import parse_handler_settings  # noqa: PLC0415
    from tickloop.operator.schedule import ScheduleSettings  # noqa: PLC0415
    from tickloop.operator.sources import SourcesSettings  # noqa: PLC0415

    return {
        "sources": lambda: section(settings, "sources", SourcesSettings),
        "gate": lambda: section(settings, "gate", GateSettings),
        "attention": lambda: section(settings, "attention", AttentionSettings),
        "monitor": lambda: section(settings, "monitor", MonitorSettings),
        "schedule": lambda: section(settings, "schedule", ScheduleSettings),
        "handlers": lambda: parse_handler_settings(settings.handlers),
    }


#: the fix for a store whose schema is behind an upgrade
MIGRATE_FIX = "run `tickloop operator migrate`"
#: the fix on a fresh machine (no schema at all): init creates the store, migrates it and asks for a goal
INIT_FIX = "run `tickloop operator init` (it creates the store and your profile)"


#: the fix for a store that cannot be reached or read
STORE_FIX = "set TICKLOOP_STORE (sqlite:///path or postgresql://...) and check the server is up"


def _store(settings: Settings, now: datetime) -> list[Finding]:
    """Reachable, migrated, and each profile's clock and goal. Never writes: a missing SQLite file
    is not created (nor its folder), an existing one is read without WAL side files, and a schema
    that is behind is one failed check ("migrations pending") with the profiles left unchecked."""
    url = settings.store.url
    dialect = "postgres" if url.startswith(("postgresql://", "postgres://")) else "sqlite"
    try:
        current, reached = _reach_store(url, dialect)
    except Exception as exc:  # noqa: BLE001
        return [Finding("store", ok=False, detail=str(exc), fix=STORE_FIX)]
    latest = _latest_migration(dialect)
    if current < latest:
        return [reached, *_pending_migrations(current, latest)]
    found = [reached, Finding("migrations", ok=True, detail=f"schema {current} of {latest}")]
    try:
        return found + _profiles(url, now)
    except Exception as exc:  # noqa: BLE001  (a doctor reports every problem, it never crashes)
        return [*found, Finding("profiles", ok=False, detail=f"{type(exc).__name__}: {exc}", fix=STORE_FIX)]


def _reach_store(url: str, dialect: str) -> tuple[int, Finding]:
    """The store's schema version and the finding that it is reachable; raises if it is not."""
    from tickloop.operator.store import open_store, redact_url  # noqa: PLC0415

    if dialect == "sqlite" and not url.startswith("memory://"):
        path, current = _sqlite_version(url)
        shown = redact_url(url) if url else f"sqlite://{path}"
        seen = f"{shown} reachable" if path.exists() else f"{shown}: no database file yet"
        return current, Finding("store", ok=True, detail=seen)
    store = open_store(url, migrate=False)
    with store:
        current = store.schema_version()
    return current, Finding("store", ok=True, detail=f"{store.url} reachable")


def _pending_migrations(current: int, latest: int) -> list[Finding]:
    detail = f"migrations pending: schema {current} of {latest}"
    return [
        Finding("migrations", ok=False, detail=detail, fix=INIT_FIX if current == 0 else MIGRATE_FIX),
        Finding("profiles", ok=True, detail="not checked until the store is migrated", skipped=True),
    ]


def _latest_migration(dialect: str) -> int:
    from tickloop.operator.store._sql import migrations  # noqa: PLC0415

    return max((v for v, _, _ in migrations(dialect)), default=0)


def _sqlite_version(url: str) -> tuple[Path, int]:
    """The SQLite file a URL names and its schema version, read-only (0: no file or no schema)."""
    from tickloop.errors import StoreError  # noqa: PLC0415
    from tickloop.operator.store import default_sqlite_path  # noqa: PLC0415

    raw = url.removeprefix("sqlite://")
    if url and (not raw or "?" in raw or "#" in raw):
        raise StoreError(f"malformed SQLite store URL {url}: use sqlite:///absolute/path.db")
    path = Path(raw).expanduser() if url else default_sqlite_path()
    if not path.exists():
        return path, 0
    return path, _read_schema_version(path, url)


def _read_schema_version(path: Path, url: str) -> int:
    import sqlite3  # noqa: PLC0415
    from urllib.parse import quote  # noqa: PLC0415

    from tickloop.errors import StoreError  # noqa: PLC0415

    # No WAL file: everything is in the main file, read as immutable (no -shm/-wal left behind, as
    # even mode=ro leaves). A WAL file: a store is open, its side files exist, read them too.
    mode = "mode=ro" if path.with_name(path.name + "-wal").exists() else "immutable=1"
    conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{mode}", uri=True)
    try:
        row = conn.execute("SELECT MAX(version) FROM tickloop_migrations").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return 0
        raise StoreError(f"cannot read SQLite store {url or path}: {exc}") from None
    finally:
        conn.close()
    return int(row[0] or 0)


def _profiles(url: str, now: datetime) -> list[Finding]:
    from tickloop.operator.store import open_store  # noqa: PLC0415

    with open_store(url, migrate=False) as store:
        return [_profile(store, p.name, p.timezone, now) for p in store.list_profiles()] or [
            Finding("profiles", ok=False, detail="no profile", fix="run `tickloop operator init`")
        ]


def _profile(store: Store, name: str, timezone: str, now: datetime) -> Finding:
    try:
        local = now.astimezone(ZoneInfo(timezone))
    except (ZoneInfoNotFoundError, ValueError):
        return Finding(
            f"profile {name}", ok=False, detail=f"timezone {timezone!r} unknown", fix="use an IANA name"
        )
    goal = store.active_goal_model(name)
    if goal is None:
        return Finding(
            f"profile {name}",
            ok=False,
            detail="no active goal model: the fast tick will refuse to act",
            fix=f"tickloop operator goal set TITLE --activate --profile {name}",
        )
    return Finding(
        f"profile {name}", ok=True, detail=f"goal v{goal.version}; local time {local:%Y-%m-%d %H:%M %Z}"
    )


def _model(settings: Settings, env: Mapping[str, str]) -> list[Finding]:
    from tickloop.models.base import ChatMessage, complete_once  # noqa: PLC0415
    from tickloop.models.registry import get_model  # noqa: PLC0415

    def check() -> Finding:
        model = get_model(settings.model.name, settings, env)
        hello = [ChatMessage("user", "Reply with the word: ok")]
        answer = asyncio.run(complete_once(model, hello, max_tokens=16))
        return Finding(
            f"model {settings.model.name}", ok=True, detail=f"answered {answer.text[:40]!r} ({model.label})"
        )

    return [_guard(f"model {settings.model.name}", check, "check [model] and the endpoint's key variable")]


def _channels(settings: Settings, env: Mapping[str, str], *, send_test: bool) -> list[Finding]:
    from tickloop.notify.settings import build_channels, parse_notify_settings  # noqa: PLC0415
    from tickloop.notify.smtp import parse_smtp_settings  # noqa: PLC0415

    try:
        channels = build_channels(
            parse_notify_settings(settings.notify),
            smtp=parse_smtp_settings(settings.smtp),
            secret=lambda name: secret(name, settings, env),
        )
    except Exception as exc:  # noqa: BLE001
        return [Finding("notify", ok=False, detail=str(exc), fix="fix [notify] / [smtp]")]
    if not send_test:
        names = ", ".join(c.describe() for c in channels)
        return [Finding("notify", ok=True, detail=f"{names} (send a test with --send-test)")]
    results = [c.send("tickloop doctor", "A test notification from `tickloop doctor`.") for c in channels]
    return [_delivery(r) for r in results]


def _delivery(result: DeliveryResult) -> Finding:
    return Finding(
        f"notify {result.channel}",
        ok=result.ok,
        detail="delivered" if result.ok else result.reason,
        fix="" if result.ok else "check the channel's URL, address or credentials",
    )


def _dry_run(env: Mapping[str, str]) -> Finding:
    value = env.get("TICKLOOP_DRY_RUN")
    if value == "0":
        return Finding(
            "dry-run", ok=True, detail="OFF: the executor performs real side effects (TICKLOOP_DRY_RUN=0)"
        )
    shown = "unset" if value is None else f"TICKLOOP_DRY_RUN={value!r}"
    return Finding("dry-run", ok=True, detail=f"ON ({shown}): the executor only logs what it would do")


def environment() -> Mapping[str, str]:
    """The process environment (a seam for tests)."""
    return os.environ
