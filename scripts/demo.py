"""`make demo` (interim, until the harness lands): the grammar, the policies, a verified ledger.

The sample ledger is produced by driving the real protocol core (admit, next_step, the run table)
through a simulated session whose turns all complete, then read back by the real CLI.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tickloop.audit import open_session_ledger
from tickloop.errors import TickCommandError
from tickloop.protocol.command import TickStart, parse_tick
from tickloop.protocol.ledger import RecordType, record
from tickloop.protocol.policy import PolicySet
from tickloop.protocol.predicates import Next, SessionView, TerminalStatus, admit, next_step
from tickloop.protocol.run import Run, RunState

POLICIES = PolicySet({"reflective-en": "tick — a basic time step; continue real thinking"})
LINES = [
    "/tick",
    "/tick 3 --policy=reflective-en",
    "/tick status",
    "/tick 0",
    "/tick 3 --forever",
    "/tick \uff13",
]


def show_grammar() -> None:
    print("== the /tick grammar")
    for line in LINES:
        try:
            result = parse_tick(line, default_count=6, default_policy="default", known_policies=POLICIES)
            print(f"  {line!r:34} -> {result}")
        except TickCommandError as exc:
            print(f"  {line!r:34} -> refused [{exc.rule}] {exc.message}")
    print("\n== compiled policies")
    for policy in POLICIES.values():
        print(f"  {policy.id:<16} {policy.time_step_bytes:>4} B  sha256:{policy.time_step_sha256[:16]}…")


def simulate(audit_dir: Path) -> Path:
    """A natural turn completed; `/tick 3` runs three steps whose turns all complete."""
    clock = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    command = parse_tick("/tick 3", default_count=6, default_policy="default", known_policies=POLICIES)
    assert isinstance(command, TickStart)
    policy = POLICIES[command.policy_id]
    fields = {"runId": "demo-run-1", "policyId": policy.id, "timeStepSha256": policy.time_step_sha256}
    fields["timeStepBytes"] = policy.time_step_bytes
    view = SessionView(
        natural_context=True, latest_terminal=TerminalStatus.COMPLETED, turn_open=False, time_steps=0
    )
    decision = admit(view, run_active=False, policy_known=True, resume=command.resume)
    run = Run("demo-run-1", policy, 0, command.count, resume_allowed=command.resume).to(RunState.SCHEDULED)
    with open_session_ledger(audit_dir, "demo", chain=True) as ledger:

        def log(kind: RecordType, **extra: object) -> None:
            nonlocal clock
            clock += timedelta(milliseconds=250)
            ledger.append(record(kind, recorded_at=clock, session_id="demo", **fields, **extra))

        log(RecordType.LOOP_ARMED, requested=command.count, resume=False, rule=decision.rule)
        while True:
            step = run.step_number(view.time_steps)
            log(RecordType.TICK_SCHEDULED, step=step, delayMs=1000)
            run = run.to(RunState.ENQUEUED)
            log(RecordType.TICK_ENQUEUED, step=step)
            view = SessionView(True, TerminalStatus.COMPLETED, False, view.time_steps + 1)
            log(RecordType.TICK_TERMINAL, step=step, status="completed")
            decision = next_step(run, view)
            if decision.next is Next.COMPLETE:
                run = run.to(RunState.COMPLETE)
                log(RecordType.LOOP_COMPLETE, rule=decision.rule)
                return ledger.path
            run = run.to(RunState.SCHEDULED)


def main() -> int:
    show_grammar()
    with tempfile.TemporaryDirectory() as tmp:
        path = simulate(Path(tmp) / ".tickloop-audit")
        print(f"\n== a sample ledger ({path.name})")
        subprocess.run([sys.executable, "-m", "tickloop", "audit", "show", str(path)], check=True)
        print("== verification")
        return subprocess.run(
            [sys.executable, "-m", "tickloop", "audit", "verify", str(path)], check=False
        ).returncode


if __name__ == "__main__":
    sys.exit(main())
