"""The way back from every dead end, end to end through the CLI, to a real SMTP server (aiosmtpd).

The issue's reproduction: a goal whose one task is an email; the slow and fast ticks stage it, the
person approves it, and then a setting is missing. Each path ends with the mail delivered after the
person fixes the setting (and, where the intent ended, hands it back with `intents retry`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

SENDER = "operator@example.com"
ADVISOR = "advisor@example.org"
TASK = f"Email {ADVISOR}: send chapter 3"


class Operator:
    """`tickloop operator ...` as a subprocess against one store and one config file."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = tmp_path / "config.toml"
        self.config.write_text("")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
        self.env.update(
            TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
            TICKLOOP_CONFIG=str(self.config),
            TICKLOOP_PROFILE="me",
            XDG_STATE_HOME=str(tmp_path / "state"),
            COLUMNS="200",
        )

    def __call__(self, *args: str, armed: bool = False, code: int = 0) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "TICKLOOP_DRY_RUN": "0"} if armed else self.env
        done = subprocess.run(
            [sys.executable, "-m", "tickloop", "operator", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == code, (args, done.stdout, done.stderr)
        return done

    def smtp(self, port: int) -> None:
        """The person fixes the setting."""
        self.config.write_text(
            f'[smtp]\nhost = "127.0.0.1"\nport = {port}\nsecurity = "plain"\n'
            f'senders = ["{SENDER}"]\ntimeoutS = 5\n'
        )

    def intent(self, intent_id: int) -> dict[str, Any]:
        listed = json.loads(self("intents", "--json").stdout)
        [found] = [i for i in listed if i["id"] == intent_id]
        return dict(found)

    def staged_and_approved(self) -> int:
        """init, slow, fast (a gate stop on the email), approve: the intent's id."""
        self("init", "--goal", "Ship the thesis", "--timezone", "Europe/Berlin", "--task", TASK)
        self("tick", "slow")
        self("tick", "fast")
        [waiting] = json.loads(self("intents", "--json", "--status", "requires_approval").stdout)
        assert (waiting["action_type"], waiting["recipient"]) == ("email", ADVISOR)
        self("approve", str(waiting["id"]), "--note", "send it")
        return int(waiting["id"])


def _delivered(sink: Any) -> None:
    [envelope] = sink.envelopes
    assert (envelope.mail_from, envelope.rcpt_tos) == (SENDER, [ADVISOR])
    assert b"send chapter 3" in envelope.content


def test_a_dry_pass_keeps_the_approval_and_the_fixed_setting_delivers(tmp_path: Path, mail_sink: Any) -> None:
    """A dry executor pass with no [smtp] leaves the approved email approved, says which setting a
    real run needs, marks its table row as a dry-run outcome, does not feed the drift guard, and an
    armed pass after the fix delivers the mail."""
    op = Operator(tmp_path)
    intent_id = op.staged_and_approved()
    dry = op("tick", "executor")
    assert "smtp.host is empty" in dry.stderr
    assert "a real run would fail; left approved" in dry.stderr
    assert op.intent(intent_id)["status"] == "approved"
    assert "approved (dry-run: would be failed)" in op("intents").stdout
    fast = op("tick", "fast")
    assert "drift guard" not in fast.stdout + fast.stderr
    op.smtp(mail_sink.port)
    op("tick", "executor", armed=True)
    sent = op.intent(intent_id)
    assert (sent["status"], sent["dry_run"]) == ("sent", False)
    _delivered(mail_sink)


def test_a_failed_email_blocked_by_the_drift_guard_is_retried_and_delivered(
    tmp_path: Path, mail_sink: Any
) -> None:
    """An armed pass fails the email for the missing setting and the drift guard then blocks its
    repeat; the person fixes the setting and runs `intents retry`, which records a decision, and the
    next armed pass sends it as a kernel-sanctioned recovery retry."""
    op = Operator(tmp_path)
    intent_id = op.staged_and_approved()
    op("tick", "executor", armed=True)
    assert op.intent(intent_id)["status"] == "failed"
    blocked = op("tick", "fast")
    assert "drift guard: repeat of" in blocked.stdout + blocked.stderr
    op.smtp(mail_sink.port)
    retried = json.loads(op("intents", "retry", str(intent_id), "--note", "smtp is set now", "--json").stdout)
    assert (retried["decision"]["kind"], retried["intent"]["status"]) == ("retry", "approved")
    assert retried["intent"]["decision_id"] == retried["decision"]["id"]
    again = op("tick", "fast")
    assert "drift guard" not in again.stdout + again.stderr
    ran = op("tick", "executor", armed=True)
    assert f"kernel-sanctioned recovery retry (decision {retried['decision']['id']})" in ran.stderr
    assert op.intent(intent_id)["status"] == "sent"
    _delivered(mail_sink)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_needs_human_email_is_retried_after_the_fix_and_delivered(tmp_path: Path, mail_sink: Any) -> None:
    """A send to a port nobody listens on ends needs_human (outcome unknown, never retried by the
    machine); `reconcile` refuses a retry's job, the person fixes the port and retries, and it arrives."""
    op = Operator(tmp_path)
    intent_id = op.staged_and_approved()
    op.smtp(_closed_port())
    op("tick", "executor", armed=True)
    assert op.intent(intent_id)["status"] == "needs_human"
    op("tick", "executor", armed=True)
    assert op.intent(intent_id)["status"] == "needs_human"  # the machine never retries it
    refused = op("intents", "retry", str(intent_id), "--note", "  ", code=2)
    assert "a retry needs a note" in refused.stderr
    op.smtp(mail_sink.port)
    op("intents", "retry", str(intent_id), "--note", "the port was wrong")
    op("tick", "executor", armed=True)
    assert op.intent(intent_id)["status"] == "sent"
    _delivered(mail_sink)


def test_a_needs_human_intent_is_reconciled_by_the_person(tmp_path: Path, mail_sink: Any) -> None:
    """`intents reconcile ID done-by-hand` completes a needs_human intent as a hand-off, recorded as a
    decision; a sent intent cannot be reconciled or retried (exit 2, status unchanged)."""
    op = Operator(tmp_path)
    intent_id = op.staged_and_approved()
    op.smtp(_closed_port())
    op("tick", "executor", armed=True)
    done = json.loads(
        op("intents", "reconcile", str(intent_id), "done-by-hand", "--note", "I sent it", "--json").stdout
    )
    assert (done["decision"]["kind"], done["intent"]["status"], done["intent"]["handoff"]) == (
        "done_by_hand",
        "completed",
        True,
    )
    refused = op("intents", "retry", str(intent_id), "--note", "again", code=2)
    assert "not at completed" in refused.stderr
    assert op.intent(intent_id)["status"] == "completed"
    assert mail_sink.envelopes == []
