"""Choosing a backend by URL, and the errors a person sees for a bad one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tickloop.operator.store as store_package
from tickloop.errors import StoreError
from tickloop.operator.store import default_sqlite_path, open_store, redact_url
from tickloop.operator.store._sql import migrations
from tickloop.operator.store.memory import MemoryStore
from tickloop.operator.store.sqlite import SQLiteStore


def test_memory_url_opens_memory_store() -> None:
    """`memory://` gives an in-process store."""
    assert isinstance(open_store("memory://"), MemoryStore)


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
        assert store.path == default_sqlite_path()
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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
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
