"""Shared fixtures: a clean TICKLOOP_* environment, private data dirs, and CI's no-skip rule."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tickloop.operator.store import Store, open_store
from tickloop.testing import FakeClock, LedgerCapture
from tickloop.testing.postgres import create_schema, drop_schema, find_server

# Performance lives in bench/, not in timed tests: hypothesis's per-example deadline (200 ms) is a timed
# test that fails on a loaded machine, so it is off. pytest-timeout still fails a test that hangs.
settings.register_profile("tickloop", deadline=None)
settings.load_profile("tickloop")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's TICKLOOP_* settings or writes to their real data dirs."""
    for name in list(os.environ):
        if name.startswith("TICKLOOP_"):
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock that moves only when the test says so."""
    return FakeClock()


@pytest.fixture
def ledger() -> LedgerCapture:
    """An in-memory ledger sink."""
    return LedgerCapture()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run the test inside its own temporary working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI=true a skipped test is a broken promise: report it as a failure."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true (counts as a failure): {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Under CI=true a module skipped while it is collected (importorskip, a module-level skip) fails too."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") == "true" and report.skipped:
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.nodeid}: skipped at collection under CI=true (counts as a failure): "
            f"{report.longrepr}"
        )


@pytest.fixture
def operator_store() -> Iterator[Store]:
    """The default store fixture for operator tests: SQLite in memory (``memory://``), migrated, empty."""
    store = open_store("memory://")
    yield store
    store.close()


@pytest.fixture(scope="session")
def pg_server() -> str:
    """A PostgreSQL server URL (env, 127.0.0.1:5432, or a throwaway server); a loud skip if none."""
    found = find_server()
    if found.url is None:
        pytest.skip("NO POSTGRESQL SERVER for the postgres tests; tried: " + "; ".join(found.tried))
    return found.url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A store URL on the test server whose tables live in a fresh schema, dropped afterwards."""
    schema, url = create_schema(pg_server)
    yield url
    drop_schema(pg_server, schema)


@pytest.fixture
def machine_in_new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's own timezone is not UTC (a server set up in local time), so a time that must be
    UTC cannot come out right by accident."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
