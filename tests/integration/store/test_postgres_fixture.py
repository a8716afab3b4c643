"""How the tests find PostgreSQL: the documented order, and a throwaway server as the fallback."""

from __future__ import annotations

import pytest

from tickloop.operator.store import open_store
from tickloop.operator.store._sql import migrations
from tickloop.testing.postgres import (
    ENV_URL,
    answers,
    create_schema,
    drop_schema,
    find_server,
    start_throwaway,
)


def test_explicit_url_that_fails_is_reported_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TICKLOOP_TEST_DATABASE_URL that does not answer is reported, never silently swapped."""
    monkeypatch.setenv(ENV_URL, "postgresql://nobody@127.0.0.1:1/none")
    found = find_server()
    assert found.url is None
    assert found.tried[0].startswith(f"{ENV_URL}: ")


@pytest.mark.postgres
@pytest.mark.slow
def test_throwaway_server_from_installed_binaries_serves_a_store() -> None:
    """With no server configured, one started from the installed binaries holds a working store."""
    url, why = start_throwaway()
    if url is None:
        pytest.skip(f"NO THROWAWAY POSTGRESQL: {why}")
    assert answers(url) is None
    schema, store_url = create_schema(url)
    with open_store(store_url) as store:
        assert store.schema_version() == len(migrations("postgres"))
    drop_schema(url, schema)
