"""The tick plugin's side of the audit ledger: the sink it writes to, and crash recovery.

A process killed mid-run leaves a ``loop_armed`` with no close. The protocol does not restore an
old run id or timer, so on startup the plugin closes such a run with ``loop_stopped``
(rule ``recover.orphaned_run``), carrying the run's own policy fields, and the ledger verifies again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from tickloop.protocol.ledger import CLOSING, POLICY_FIELDS, RECOVER_ORPHANED_RUN, RecordType

__all__ = ["RECOVER_ORPHANED_RUN", "LedgerSink", "NullLedger", "orphaned_run"]


class LedgerSink(Protocol):
    """Where records go: ``tickloop.audit.LedgerFile`` (durable) or ``tickloop.testing.LedgerCapture``."""

    def append(self, rec: dict[str, Any]) -> dict[str, Any]: ...


class NullLedger:
    """Discards records (the benchmark measures scheduling, not disk)."""

    def append(self, rec: dict[str, Any]) -> dict[str, Any]:
        return rec


def orphaned_run(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The run id and policy fields of a run left open by a crash, if any."""
    open_runs: dict[str, dict[str, Any]] = {}
    for rec in records:
        run_id = rec.get("runId")
        if not isinstance(run_id, str):
            continue
        if rec.get("type") == RecordType.LOOP_ARMED:
            open_runs[run_id] = {"runId": run_id, **{k: rec.get(k) for k in POLICY_FIELDS}}
        elif rec.get("type") in CLOSING:
            open_runs.pop(run_id, None)
    return next(reversed(open_runs.values()), None)
