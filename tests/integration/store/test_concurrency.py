"""Real processes racing on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from bench.store_load import T0, run_processes, seed_intents

from tickloop.operator.domain import IntentStatus
from tickloop.operator.store import Store, open_store

pytestmark = pytest.mark.slow
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated store URL with profile `p`, on each real backend."""
    found = (
        f"sqlite://{tmp_path / 'race.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    )
    with open_store(found) as store:
        store.create_profile("p", now=T0)
    return found


def _statuses(store: Store) -> Counter[IntentStatus]:
    return Counter(i.status for i in store.list_intents("p", limit=100_000))


def test_eight_processes_claim_each_intent_exactly_once(url: str) -> None:
    """8 executors claiming 10,000 intents at once: every intent is claimed once, none is lost."""
    seed_intents(url, "p", 10_000)
    results = run_processes(
        [("claim", {"url": url, "profile": "p", "owner": f"ex-{n}", "batch": 25}) for n in range(8)]
    )
    per_process = [result["ids"] for result in results]
    claimed = [i for ids in per_process for i in ids]
    assert len(claimed) == 10_000
    assert len(set(claimed)) == 10_000
    assert sum(1 for ids in per_process if ids) >= 2, "the processes did not overlap"
    with open_store(url) as store:
        assert _statuses(store) == Counter({IntentStatus.CLAIMED: 10_000})
        owners = {i.id: i.claim_owner for i in store.list_intents("p", limit=100_000)}
    for n, ids in enumerate(per_process):
        assert all(owners[i] == f"ex-{n}" for i in ids)


def test_thirty_two_spenders_never_exceed_cap(url: str) -> None:
    """32 processes spending at the same moment: exactly the daily cap is spent, never more."""
    args = {"url": url, "profile": "p", "cap": 6, "gap_min": 0, "budget": "cap", "minutes": [0] * 10}
    results = run_processes([("spend", args)] * 32)
    assert sum(len(spent) for spent in results) == 6
    with open_store(url) as store:
        assert len(store.attention_spends("p")) == 6


def test_sixteen_spenders_never_break_the_gap(url: str) -> None:
    """16 processes spending through one day: every two spends are at least the minimum gap apart."""
    minutes = list(range(0, 24 * 60, 13))
    args = {"url": url, "profile": "p", "cap": 100, "gap_min": 90, "budget": "gap", "minutes": minutes}
    results = run_processes([("spend", args)] * 16)
    spent = sorted(m for got in results for m in got)
    assert spent, "nothing was spent"
    assert all(later - earlier >= 90 for earlier, later in itertools.pairwise(spent))
    with open_store(url) as store:
        assert len(store.attention_spends("p")) == len(spent)


@pytest.mark.parametrize("hand_over", [False, True], ids=["finish_intent", "finish_and_send"])
def test_reaper_never_overwrites_completed_work(url: str, hand_over: bool) -> None:
    """A reaper racing completing executors: each intent ends completed or needs_human, never both."""
    seed_intents(url, "p", 2_000, status=IntentStatus.SENDING, owner="ex")
    with open_store(url) as store:
        ids = sorted(i.id for i in store.list_intents("p", limit=10_000))
    # Finishers work from the newest claims down, the reaper's cutoff moves up from the oldest:
    # they meet somewhere in the middle, where the race is.
    job = {"url": url, "profile": "p", "owner": "ex", "hand_over": hand_over}
    finishers = [("finish", {**job, "ids": ids[n::4][::-1]}) for n in range(4)]
    reaper = ("reap", {"url": url, "profile": "p", "steps": 400, "step_s": 5})
    *finished, reaped = run_processes([*finishers, reaper])
    completed = {i for won in finished for i in won}
    assert completed
    assert reaped, "the reaper never won a race; the test proved nothing"
    assert completed.isdisjoint(reaped)
    assert completed | set(reaped) == set(ids)
    with open_store(url) as store:
        final = {i.id: i.status for i in store.list_intents("p", limit=10_000)}
    assert all(final[i] is IntentStatus.COMPLETED for i in completed)
    assert all(final[i] is IntentStatus.NEEDS_HUMAN for i in reaped)
