"""Choosing a backend by URL, and the errors a person sees for a bad one."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tickloop.operator.store as store_package
from tickloop.errors import StoreError
from tickloop.operator.store import default_sqlite_path, open_store, redact_url
from tickloop.operator.store._sql import migrations
from tickloop.operator.store.sqlite import SQLiteMemoryStore, SQLiteStore

NOW = datetime(2026, 7, 7, tzinfo=UTC)


def test_memory_url_opens_a_migrated_sqlite_database_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory://` is the SQLite backend in memory: the same migrations as a file, and no file."""
    monkeypatch.chdir(tmp_path)
    with open_store("memory://") as store:
        assert list(tmp_path.iterdir()) == []
        assert isinstance(store, SQLiteMemoryStore)
        assert store.schema_version() == len(migrations("sqlite"))
        assert store.url == "memory://"


def test_each_memory_store_is_private_and_gone_when_closed() -> None:
    """Two `memory://` stores share nothing, and closing one frees its data (a new one is empty)."""
    first, second = open_store("memory://"), open_store("memory://")
    first.create_profile("p", now=NOW)
    assert [p.name for p in first.list_profiles()] == ["p"]
    assert second.list_profiles() == []
    first.close()
    second.close()
    with open_store("memory://") as third:
        assert third.list_profiles() == []


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_an_abandoned_write_left_mid_statement_keeps_the_data_and_the_store_writable(
    backend: str, tmp_path: Path
) -> None:
    """A signal handler's `abandon_transaction`, called while a write's RETURNING rows are unread
    (SQLite then refuses every COMMIT on that connection), keeps what was committed and lets the last
    writes through, on `memory://` as on a file."""
    url = "memory://" if backend == "memory" else f"sqlite://{tmp_path / 's.db'}"
    with open_store(url) as store:
        store.create_profile("p", now=NOW)

        def interrupted() -> Iterator[None]:  # a frame the signal handler never returns to
            with store._write() as tx:
                tx._execute(
                    "create_profile", {"name": "q", "display_name": "", "timezone": "UTC", "now": NOW}
                )
                yield

        frame = interrupted()
        next(frame)
        store.abandon_transaction()
        store.create_profile("r", now=NOW)
        assert [p.name for p in store.list_profiles()] == ["p", "r"]
        with pytest.raises(sqlite3.OperationalError, match="no transaction"):
            frame.close()  # only here: the real process exits, and the frame's ROLLBACK never runs


def test_sqlite_url_names_the_file(tmp_path: Path) -> None:
    """`sqlite:///abs/path` opens (and creates) that file, migrated."""
    path = tmp_path / "deep" / "s.db"
    with open_store(f"sqlite://{path}") as store:
        assert isinstance(store, SQLiteStore)
        assert store.schema_version() == len(migrations("sqlite"))
    assert path.exists()


def test_empty_url_uses_user_data_dir() -> None:
    """No URL configured means a SQLite file under the user data dir (platformdirs, XDG here)."""
    with open_store("") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == str(default_sqlite_path())  # a str: the tick path has no pathlib
    assert "data" in str(default_sqlite_path())


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:hunter2@h/db", "unknown store URL mysql://u:***@h/db"),
        ("sqlite://", "malformed SQLite store URL"),
        ("sqlite:///x.db?mode=ro", "malformed SQLite store URL"),
        ("postgresql://u:hunter2@[::1/db", "malformed PostgreSQL store URL postgresql://u:***@"),
        (
            "postgresql://u:hunter2@127.0.0.1:1/db",
            "cannot connect to PostgreSQL store postgresql://u:***@127",
        ),
        ("postgres://h/db?password=hunter2&port=1&host=127.0.0.1", "password=***"),
    ],
)
def test_bad_urls_are_named_without_password(url: str, message: str) -> None:
    """A wrong, malformed or unreachable URL gets a StoreError that never shows the password."""
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert message in str(caught.value)
    assert "hunter2" not in str(caught.value)


@given(st.text(st.characters(blacklist_characters="@/?#&"), min_size=1, max_size=30))
def test_redaction_removes_any_password(password: str) -> None:
    """Whatever the password, the redacted URL does not contain it."""
    redacted = redact_url(f"postgresql://user:{password}@host:5432/db")
    assert redacted == "postgresql://user:***@host:5432/db"


def test_sqlite_store_does_not_import_psycopg(tmp_path: Path) -> None:
    """A tick on SQLite never pays psycopg's import cost at start-up."""
    code = (
        "import sys; from tickloop.operator.store import open_store; "
        f"open_store('sqlite://{tmp_path / 's.db'}').close(); print('psycopg' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "False"


def test_store_package_exports_are_its_public_names() -> None:
    """`tickloop.operator.store.__all__` names the public API, and every name in it exists."""
    assert set(store_package.__all__) == {
        "EPOCH",
        "Ending",
        "Store",
        "default_sqlite_path",
        "open_store",
        "redact_url",
    }
    assert all(hasattr(store_package, name) for name in store_package.__all__)


def test_a_sqlite_path_with_uri_characters_opens_that_very_file(tmp_path: Path) -> None:
    """Spaces, ``?``, ``#``, ``%`` and non-ASCII in the path are percent-encoded in the file URI the
    store connects with: the store is the file at that path, in the directories it made (0700)."""
    path = tmp_path / "a b?c#d%20e ü" / "new dir" / "s.db"
    with SQLiteStore(path) as store:
        store.create_profile("p", now=NOW)
    assert path.is_file()
    assert [p.name for p in path.parent.parent.iterdir()] == ["new dir"]
    assert path.parent.stat().st_mode & 0o777 == 0o700
    with SQLiteStore(str(path), create=False) as store:
        assert store.get_profile("p").name == "p"
