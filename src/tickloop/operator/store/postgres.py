"""The PostgreSQL backend: several machines share one database (psycopg 3 with a pool).

psycopg is imported here only, and this module only when a ``postgresql://`` URL is opened, so a
one-shot tick on SQLite never pays for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from tickloop.errors import ConflictError, NotFoundError, StoreError
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._sql import Tx, load_queries, migrations, to_pyformat
from tickloop.operator.store.base import Ending
from tickloop.operator.store.sqlops.intents import handed_over, handover_params
from tickloop.operator.store.sqlops.views import OverviewSnapshot
from tickloop.operator.store.sqlstore import SqlStore

#: Arbitrary constant: the advisory lock key that serialises concurrent migrators.
_MIGRATION_LOCK = 0x7469636B


def _same(moment: datetime) -> datetime:
    return moment


class PostgresStore(SqlStore):
    """A store in a PostgreSQL database (tables in the connection's ``search_path`` schema)."""

    def __init__(
        self, conninfo: str, *, url: str, migrate: bool = True, max_size: int = 4, timeout: float = 10.0
    ) -> None:
        self.url = url
        _probe(conninfo, url, timeout)
        self._queries = {name: to_pyformat(sql) for name, sql in load_queries("postgres").items()}
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_size,
            # autocommit: reads are one round trip; writes open an explicit transaction().
            kwargs={"row_factory": dict_row, "connect_timeout": max(1, int(timeout)), "autocommit": True},
            open=False,
            timeout=timeout,
            name="tickloop-store",
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except PoolTimeout:
            self._pool.close()
            raise StoreError(
                f"cannot connect to PostgreSQL store {url} within {timeout:g}s: is the server running, "
                "and are host, port, database and credentials right?"
            ) from None
        if migrate:
            self.migrate()

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Tx]:
        try:
            with self._pool.connection() as conn:
                if not write:  # one statement, one round trip: autocommit needs no BEGIN/COMMIT
                    yield Tx(conn, self._queries, _same, _translate)
                    return
                with conn.transaction():
                    yield Tx(conn, self._queries, _same, _translate)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL store {self.url}: {_redacted(exc)}") from None

    def _write(self) -> AbstractContextManager[Tx]:
        # READ COMMITTED is enough: every write is a conditional UPDATE whose WHERE PostgreSQL
        # re-checks against the newest row version after waiting for a concurrent writer.
        return self._transaction(write=True)

    def _write_one(self) -> AbstractContextManager[Tx]:
        # One statement in autocommit is atomic on its own and keeps the same compare-and-set
        # semantics; it saves the BEGIN and COMMIT round trips on the executor's hot path.
        return self._transaction(write=False)

    def _read(self) -> AbstractContextManager[Tx]:
        # Every read operation is a single statement, which is its own consistent snapshot.
        return self._transaction(write=False)

    def _fts_query(self, tokens: list[str]) -> str:
        return " ".join(tokens)  # plainto_tsquery ANDs the words and parses no operators

    def finish_and_send(
        self, profile: str, *, ending: Ending | None, send: int | None, owner: str, now: datetime
    ) -> tuple[bool, bool]:
        # One statement in autocommit: one round trip and one commit per intent on the executor's
        # hot path, where the two statements of the shared version would cost four round trips.
        params = handover_params(profile, ending, send, owner=owner, now=now)
        with self._write_one() as tx:
            found = tx.rows("finish_and_send", **params)
        return handed_over(found, ending, send)

    def overview_snapshot(
        self, profile: str, *, kinds: Sequence[str], waiting: int, since: datetime
    ) -> OverviewSnapshot:
        # One statement, one round trip: the page made about twenty, each through the pool.
        with self._read() as tx:
            row = tx.one(
                "overview_snapshot",
                profile=profile,
                kinds=json.dumps(list(kinds)),
                waiting=waiting,
                since=since,
            )
        if row is None or row["profile"] is None:
            raise NotFoundError(f"no profile {profile!r}")
        found = {r["tick_kind"]: rows.progress(r) for r in row["last_ticks"] or []}
        return OverviewSnapshot(
            profile=rows.profile(row["profile"]),
            goal=None if row["goal"] is None else rows.goal(row["goal"]),
            step=None if row["step"] is None else rows.step(row["step"]),
            last={k: found.get(k) for k in kinds},
            waiting=[rows.intent(r) for r in row["waiting"] or []],
            waiting_count=int(row["waiting_count"]),
            conditions=[rows.condition(r) for r in row["conditions"] or []],
            spends=[rows.spend(r) for r in row["spends"] or []],
            monitor_ran_at=rows.ts_or_none(row["monitor_ran_at"]),
        )

    # -- migrations ---------------------------------------------------------------------------------

    def migrate(self, *, target: int | None = None) -> list[int]:
        applied: list[int] = []
        pending = [m for m in migrations("postgres") if target is None or m[0] <= target]
        current = self.schema_version()
        if all(version <= current for version, _, _ in pending):
            return applied  # up to date: no lock, no DDL, on every one-shot tick's open
        with self._pool.connection() as conn, conn.transaction():
            # One migrator at a time per database; the others wait, then find nothing to do.
            cur = conn.cursor(row_factory=dict_row)
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute(
                "CREATE TABLE IF NOT EXISTS tickloop_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
            )
            done = {r["version"] for r in cur.execute("SELECT version FROM tickloop_migrations").fetchall()}
            for version, name, sql in pending:
                if version in done:
                    continue
                try:
                    cur.execute(sql.encode("utf-8"))
                except psycopg.Error as exc:
                    raise StoreError(
                        f"PostgreSQL store {self.url}: migration {version:04d}_{name} failed: "
                        f"{_redacted(exc)}"
                    ) from None
                conn.execute("INSERT INTO tickloop_migrations VALUES (%s, %s, now())", (version, name))
                applied.append(version)
        return applied

    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            exists = cur.execute("SELECT to_regclass('tickloop_migrations') AS t").fetchone()
            if exists is None or exists["t"] is None:
                return 0
            row = cur.execute("SELECT MAX(version) AS v FROM tickloop_migrations").fetchone()
            return int(row["v"] or 0) if row else 0

    # -- tick locks ---------------------------------------------------------------------------------

    @contextmanager
    def tick_lock(
        self,
        profile: str,
        tick_kind: str,
        *,
        owner: str,  # noqa: ARG002  (the session is the owner on PostgreSQL)
        now: datetime,  # noqa: ARG002  (no lease to time)
        lease: timedelta = timedelta(hours=1),  # noqa: ARG002  (the server frees a dead session's lock)
    ) -> Iterator[bool]:
        # A session advisory lock lives on one connection: hold that connection for the whole tick.
        # If the process dies the server drops the session and the lock with it, so no lease needed.
        with self._pool.connection() as conn:
            tx = Tx(conn, self._queries, _same, _translate)
            held = bool((tx.one("try_tick_lock", profile=profile, tick_kind=tick_kind) or {}).get("got"))
            try:
                yield held
            finally:
                if held:
                    tx.one("drop_tick_lock", profile=profile, tick_kind=tick_kind)


def _redacted(exc: BaseException) -> str:
    """An exception's text with any password masked (a driver may quote connection parameters)."""
    from tickloop.operator.store import redact_url  # noqa: PLC0415  (the package imports this module lazily)

    return redact_url(str(exc))


def _probe(conninfo: str, url: str, timeout: float) -> None:
    """Fail fast with the server's own reason: a pool would retry quietly until its timeout."""
    from tickloop.operator.store import redact_url  # noqa: PLC0415  (the package imports this module lazily)

    try:
        psycopg.connect(conninfo, connect_timeout=max(1, int(timeout))).close()
    except psycopg.Error as exc:
        reason = redact_url(" ".join(str(exc).split())) or type(exc).__name__
        raise StoreError(f"cannot connect to PostgreSQL store {url}: {reason}") from None


def _translate(exc: Exception, params: Mapping[str, Any]) -> StoreError | None:
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        return NotFoundError(
            f"profile {params.get('profile')!r} (or a row this refers to) does not exist; "
            "create the profile with `tickloop operator init`"
        )
    if isinstance(exc, pg_errors.IntegrityError):
        return ConflictError(f"the store refused the write: {exc}")
    if isinstance(exc, psycopg.Error):
        return StoreError(f"PostgreSQL store: {exc}")
    return None
