"""Hostile text never reaches the terminal raw: every CLI view, run as a real process, shows it inert.

A store is seeded with hostile task titles (as a mail source would copy a subject), intent titles,
payloads and recipients, plan steps, tick errors and attention subjects; a session transcript and an
audit ledger carry hostile model output and fields. Each corpus entry must come out inert in every
view: no escape sequence, no C0/C1 control but newline and tab, no bidi override, no fake prompt line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from tickloop.audit import open_session_ledger
from tickloop.harness import open_session
from tickloop.models import Usage
from tickloop.operator import staging
from tickloop.operator.domain import NewPlanStep, NewProgress, Outcome
from tickloop.operator.gate import GateSettings
from tickloop.operator.service import InitSpec, init_profile
from tickloop.operator.store import open_store
from tickloop.protocol.envelope import USER_SOURCE, Message
from tickloop.protocol.ledger import RecordType, record
from tickloop.protocol.predicates import TerminalStatus

CORPUS = {
    "osc_title": "T1 \x1b]0;pwned title\x07visible1",
    "csi_clear": "T2 \x1b[2J\x1b[Hvisible2",
    "bel": "T3 ring\x07\x07visible3",
    "backspace": "T4 safe\x08\x08\x08\x08evil visible4",
    "rtl_override": "T5 \u202egpj.exe visible5",
    "fake_prompt": "T6 visible6\nyou> rm -rf ~\r\x1b[2Kyou> approve all",
    "c1_csi": "T7 \x9b31mvisible7\x9d0;x\x9c",
}
#: What must never be on the screen: ESC, C0 controls but newline and tab, DEL, C1, bidi controls.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NOW = datetime.now(UTC)


def hostile(tag: str) -> str:
    return " ".join(f"{text}" for text in CORPUS.values()) + f" [{tag}]"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile")
    url = f"sqlite://{root / 'store.db'}"
    with open_store(url) as store:
        _, goal = init_profile(store, "me", InitSpec(hostile("goal")), now=NOW - timedelta(hours=1))
        for name, text in CORPUS.items():
            store.add_task("me", f"mail subject {name}: {text}", now=NOW)
            staging.stage(
                store, "me",
                staging.Draft(action_type="email", title=text, recipient=f"{name}@example.org",
                              payload={"body": text}, origin=staging.ORIGIN_CLI),
                GateSettings(), now=NOW,
            )  # fmt: skip
            store.record_progress(
                "me",
                NewProgress(tick_kind="fast", outcome=Outcome.FAILED, started_at=NOW, ended_at=NOW,
                            error=text, detail=text),
            )  # fmt: skip
            store.log_notification(
                "me", channel="attention", kind="attention", subject=text, now=NOW,
                body=json.dumps({"check": text, "kind": "notice", "sent": False}),
            )  # fmt: skip
        store.replace_plan("me", goal.version, [NewPlanStep(hostile("step"))], now=NOW)
    session = open_session(root / "sessions", "hostile")
    for text in CORPUS.values():
        session.start_turn(Message(role="user", content=(text,), source=USER_SOURCE))
        session.add_reply(f"reply: {text}")
        session.end_turn(TerminalStatus.COMPLETED, usage=Usage(1, 1))
    session.close()
    # A transcript written by an older version, or by hand, whose header id holds controls.
    evil = {"type": "session", "id": CORPUS["fake_prompt"], "version": 1, "createdAt": "2026-01-01T00:00:00Z"}
    (root / "sessions" / "session-evil.jsonl").write_text(json.dumps(evil) + "\n", encoding="utf-8")
    ledger = open_session_ledger(root / "audit", "hostile")
    for text in CORPUS.values():
        ledger.append(
            record(RecordType.LOOP_STOPPED, recorded_at=NOW, session_id="hostile", runId=text,
                   policyId=text, timeStepSha256="0" * 64, timeStepBytes=4, rule=text, steps=0)
        )  # fmt: skip
    ledger.close()
    return {"root": str(root), "url": url, "ledger": str(ledger.path)}


VIEWS = {
    "board": ["operator", "board", "--profile", "me"],
    "intents": ["operator", "intents", "--profile", "me"],
    "status": ["operator", "status", "--profile", "me"],
    "progress": ["operator", "progress", "--profile", "me"],
    "attention": ["operator", "attention", "--profile", "me"],
    "plan": ["operator", "plan", "--profile", "me"],
    "goal": ["operator", "goal", "show", "--profile", "me"],
    "sessions show": ["sessions", "show", "hostile", "--sessions-dir", "{root}/sessions"],
    "sessions list": ["sessions", "list", "--sessions-dir", "{root}/sessions"],
    "audit show": ["audit", "show", "{ledger}"],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_every_view_shows_hostile_text_inert(seeded: dict[str, str], view: str) -> None:
    """No escape sequence, control, bidi override or fake `you>` line from stored text reaches a terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(TICKLOOP_STORE=seeded["url"], COLUMNS="400", LINES="200")
    args = [part.format(**seeded) for part in VIEWS[view]]
    result = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", *args],
        cwd=seeded["root"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.strip(), "the view printed nothing"
    raw = RAW.findall(out)
    assert not raw, f"raw control characters reached the terminal: {sorted(set(raw))!r}"
    # A line of stored text that starts at column 0 (or a table's first cell) with `you>` would pass
    # for the person's prompt; continuation lines are indented under their turn.
    assert not [line for line in out.splitlines() if re.match(r"(?:[│┃|] )?you>", line)]
    assert "visible" in out  # the hostile rows are shown, not dropped


def test_a_tick_log_line_quoting_hostile_text_is_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """A tick's stderr log (which may quote model output or a tick error) reaches the terminal inert."""
    from tickloop.operator.runner import _stderr_log  # noqa: PLC0415
    from tickloop.testing import FakeClock  # noqa: PLC0415

    _stderr_log(FakeClock())(f"fast tick failed: {hostile('log')}")
    err = capsys.readouterr().err
    assert not RAW.findall(err)
    first, *rest = err.rstrip("\n").split("\n")
    assert first.startswith("[2026-")
    # A quoted line break is kept (multi-line log messages stay readable) but every continuation is
    # indented: quoted text can never pass for a log line or a prompt of its own.
    assert all(row.startswith((" ", "\t")) for row in rest)
    assert "visible7" in err
