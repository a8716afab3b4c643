"""Reopening after a crash, in-process: open turns and open runs are closed by new records."""

from __future__ import annotations

from pathlib import Path

from tickloop.audit import open_session_ledger, read_ledger, session_file_name, verify_file
from tickloop.harness import TickOptions, open_chat_agent, open_session
from tickloop.models import OfflineModel
from tickloop.protocol.ledger import RecordType, record
from tickloop.testing import FakeClock


async def test_a_run_left_open_by_a_crash_is_closed_on_start(tmp_path: Path) -> None:
    """A ledger whose last run was never closed gets loop_stopped recover.orphaned_run and verifies."""
    clock = FakeClock()
    options = TickOptions.from_mapping({"auditDir": str(tmp_path / "audit"), "delayMs": 0})
    fields = {"runId": "r1", "policyId": "default", "timeStepSha256": "ab" * 32, "timeStepBytes": 4}
    with open_session_ledger(options.audit_dir, "s") as ledger:
        ledger.append(
            record(RecordType.LOOP_ARMED, recorded_at=clock.now(), session_id="s", requested=3, **fields)
        )
        ledger.append(
            record(RecordType.TICK_SCHEDULED, recorded_at=clock.now(), session_id="s", step=1, **fields)
        )
    agent = open_chat_agent(OfflineModel(), sessions_dir=tmp_path / "sessions", session_id="s", tick=options)
    await agent.start()
    await agent.close()
    path = options.audit_dir / session_file_name("s")
    last = read_ledger(path).records()[-1]
    assert (last["type"], last["rule"], last["runId"]) == ("loop_stopped", "recover.orphaned_run", "r1")
    assert last["timeStepSha256"] == "ab" * 32
    report, _ = verify_file(path)
    assert report.ok, report.violations


async def test_reopening_restores_the_transcript_and_the_model_sees_it(tmp_path: Path) -> None:
    """A reopened session continues where it left off: the model receives the earlier turns."""
    first = open_chat_agent(OfflineModel(echo=True), sessions_dir=tmp_path, session_id="s", tick=None)
    await first.start()
    first.submit("remember 42")
    await first.wait_idle()
    await first.close()
    model = OfflineModel()
    second = open_chat_agent(model, sessions_dir=tmp_path, session_id="s", tick=None)
    await second.start()
    second.submit("what number?")
    await second.wait_idle()
    await second.close()
    assert [(m.role, m.content) for m in model.calls[0]] == [
        ("user", "remember 42"),
        ("assistant", "echo: remember 42"),
        ("user", "what number?"),
    ]
    reopened = open_session(tmp_path, "s")
    assert len(reopened.turns) == 2
    reopened.close()
