"""The contract suite's fixture: the same tests against every store backend.

Three backends: SQLite in memory (``memory://``, the default test store), SQLite on a file (WAL,
real file locking) and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickloop.operator.store import Store, open_store

NOW = datetime(2026, 7, 7, 17, 0, tzinfo=UTC)
BACKENDS = ["sqlite-memory", "sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty store of each backend, with a profile ``p`` and an empty profile ``q``."""
    if request.param == "sqlite-memory":
        url = "memory://"
    elif request.param == "sqlite-file":
        url = f"sqlite://{tmp_path / 'store.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    opened = open_store(url)
    opened.create_profile("p", now=NOW)
    opened.create_profile("q", now=NOW)
    yield opened
    opened.close()
