"""An email intent added by hand, end to end through the CLI: gated at once, approved, sent live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SENDER = "operator@example.com"  # the sink accepts any; smtp.senders allows this one
PERSON = "person@example.com"


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    (tmp_path / "config.toml").write_text(
        f'[smtp]\nhost = "127.0.0.1"\nport = {port}\nsecurity = "plain"\n'
        f'senders = ["{SENDER}"]\ntimeoutS = 5\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    return env


def _operator(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def _intents(env: dict[str, str]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(_operator(env, "intents", "--profile", "me", "--json").stdout)
    return listed


def test_an_email_added_by_hand_waits_is_approved_and_arrives(tmp_path: Path, mail_sink: Any) -> None:
    """`intents add` of an email waits for approval, nothing is sent before `approve`, and after it a
    live executor (TICKLOOP_DRY_RUN=0) delivers the message to the SMTP server."""
    env = _env(tmp_path, mail_sink.port)
    _operator(env, "init", "--profile", "me", "--goal", "Ship v1")
    payload = json.dumps({"from": SENDER, "body": "The draft is ready for review."})
    added = json.loads(
        _operator(
            env, "intents", "add", "--profile", "me", "--type", "email", "--title", "Draft ready",
            "--recipient", PERSON, "--payload", payload, "--json",
        ).stdout
    )  # fmt: skip
    assert (added["status"], added["verdict"]) == ("requires_approval", "requires_approval")

    live = {**env, "TICKLOOP_DRY_RUN": "0"}
    _operator(live, "tick", "executor", "--profile", "me")  # unapproved: the executor must leave it waiting
    assert [i["status"] for i in _intents(env)] == ["requires_approval"]
    assert mail_sink.envelopes == []

    _operator(env, "approve", str(added["id"]), "--profile", "me", "--note", "send it")
    assert [i["status"] for i in _intents(env)] == ["approved"]
    _operator(live, "tick", "executor", "--profile", "me")

    assert [i["status"] for i in _intents(env)] == ["sent"]
    assert len(mail_sink.envelopes) == 1
    envelope = mail_sink.envelopes[0]
    assert (envelope.mail_from, envelope.rcpt_tos) == (SENDER, [PERSON])
    content = envelope.content
    assert isinstance(content, bytes)
    assert b"Subject: Draft ready" in content
    assert b"The draft is ready for review." in content
