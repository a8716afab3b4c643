"""Migrations: numbered files per backend, recorded in a table, applied on first use; upgrades keep data."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickloop.operator.domain import IntentStatus
from tickloop.operator.store import open_store
from tickloop.operator.store._sql import migrations
from tickloop.operator.store.sqlite import split_script

NOW = datetime(2026, 7, 7, tzinfo=UTC)


def test_both_backends_have_the_same_numbered_migrations() -> None:
    """SQLite and PostgreSQL ship the same migration numbers and names."""
    sqlite = [(v, n) for v, n, _ in migrations("sqlite")]
    postgres = [(v, n) for v, n, _ in migrations("postgres")]
    assert sqlite == postgres
    assert [v for v, _ in sqlite] == list(range(1, len(sqlite) + 1))


def test_trigger_bodies_stay_whole() -> None:
    """A trigger's inner semicolons do not split it into broken statements."""
    sql = (
        "CREATE TABLE a(x);\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\n  SELECT 2;\nEND;\n-- end\n"
    )
    assert len(split_script(sql)) == 2


def _upgrade(url: str) -> None:
    with open_store(url, migrate=False) as store:
        assert store.migrate(target=1) == [1]
        assert store.schema_version() == 1
        store.create_profile("p", now=NOW)
        store.add_note("p", "written under the first schema", now=NOW)
        latest = len(migrations("sqlite"))  # both dialects have the same versions
        assert store.migrate() == list(range(2, latest + 1))
        assert store.migrate() == []
        assert store.schema_version() == latest
        assert [n.text for n in store.search_notes("p", "first schema")] == ["written under the first schema"]
        assert store.get_profile("p").created_at == NOW


def test_sqlite_upgrade_from_first_schema_keeps_and_indexes_data(tmp_path: Path) -> None:
    """Data written under schema 1 survives the upgrade and becomes searchable."""
    _upgrade(f"sqlite://{tmp_path / 's.db'}")


@pytest.mark.postgres
def test_postgres_upgrade_from_first_schema_keeps_and_indexes_data(pg_url: str) -> None:
    """Data written under schema 1 survives the upgrade on PostgreSQL and becomes searchable."""
    _upgrade(pg_url)


def test_reopening_applies_nothing(tmp_path: Path) -> None:
    """A second process opening a migrated store finds nothing to apply."""
    url = f"sqlite://{tmp_path / 's.db'}"
    open_store(url).close()
    with open_store(url, migrate=False) as store:
        assert store.migrate() == []


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_0005_keeps_every_decision_and_allows_the_reconciling_kinds(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A store at schema 4 with an approval upgrades to 5 with the decision intact, and then records
    a retry (the CHECK now allows it)."""
    from tickloop.operator.domain import DecisionKind, NewIntent, Verdict  # noqa: PLC0415

    url = f"sqlite://{tmp_path / 's.db'}" if backend == "sqlite" else request.getfixturevalue("pg_url")
    with open_store(url, migrate=False) as store:
        store.migrate(target=4)
        store.create_profile("p", now=NOW)
        made = store.stage_intent("p", NewIntent("note", "t"), now=NOW)
        store.record_verdict("p", made.id, Verdict.REQUIRES_APPROVAL, ["r"], now=NOW)
        approval = store.decide("p", made.id, DecisionKind.APPROVE, by="ann", now=NOW, note="ok")
        [claimed] = store.claim_intents("p", owner="ex", now=NOW)
        store.finish_intent("p", claimed.id, IntentStatus.FAILED, owner="ex", now=NOW)
    with open_store(url) as store:
        assert store.schema_version() >= 5
        assert store.get_decision("p", approval.id) == approval
        retry, intent = store.reconcile("p", made.id, DecisionKind.RETRY, by="ann", now=NOW, note="again")
        assert (retry.kind, intent.status) == (DecisionKind.RETRY, IntentStatus.APPROVED)
