"""`tickloop operator` as a person runs it: a real subprocess against a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tickloop.operator.store._sql import migrations

EXIT_USAGE = 2
METACHARS = "x'); DROP TABLE intents;-- \" %s :p"


class Cli:
    """Runs `python -m tickloop.cli operator ...` with the store in a temporary file."""

    def __init__(self, tmp_path: Path) -> None:
        self.env = {**os.environ, "TICKLOOP_STORE": f"sqlite://{tmp_path / 'op.db'}"}
        self.cwd = tmp_path

    def run(self, *args: str | bytes, ok: bool = True) -> subprocess.CompletedProcess[str]:
        argv: list[str | bytes] = [sys.executable, "-m", "tickloop.cli", "operator", *args]
        done = subprocess.run(
            argv, capture_output=True, text=True, env=self.env, cwd=self.cwd, check=False, timeout=120
        )
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def fails(self, *args: str | bytes) -> str:
        done = self.run(*args, ok=False)
        assert done.returncode == EXIT_USAGE, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return done.stderr


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """A CLI with a profile `me` whose first goal is active."""
    runner = Cli(tmp_path)
    runner.run("init", "--profile", "me", "--goal", "Ship v1", "--display-name", "Me")
    return runner


def test_init_from_toml_file(tmp_path: Path) -> None:
    """`init --from FILE.toml` creates the profile and an active goal model with its data."""
    runner = Cli(tmp_path)
    spec = tmp_path / "me.toml"
    spec.write_text(
        '[profile]\ndisplay_name = "Ann"\ntimezone = "Europe/Berlin"\n'
        '[goal]\ntitle = "Write the book"\nbody = "chapter a week"\n[goal.data]\nweekly = 1\n',
        encoding="utf-8",
    )
    made = runner.json("init", "--profile", "ann", "--from", str(spec))
    assert (made["profile"]["timezone"], made["goal"]["status"]) == ("Europe/Berlin", "active")
    assert made["goal"]["data"] == {"weekly": 1}
    assert runner.json("goal", "show", "--profile", "ann")[0]["title"] == "Write the book"


def test_task_intent_and_approval_flow(cli: Cli) -> None:
    """A person adds a task, stages an intent, and sees both in JSON listings."""
    task = cli.json("task", "add", "Draft post", "--priority", "5", "--profile", "me")
    cli.run("task", "block", str(task["id"]), "--profile", "me")
    board = cli.json("board", "--profile", "me")
    assert board["hash"].startswith("sha256:")
    assert [(t["title"], t["status"]) for t in board["tasks"]] == [("Draft post", "blocked")]
    intent = cli.json(
        "intents", "add", "--profile", "me", "--type", "email", "--title", "Hi",
        "--recipient", "a@example.org", "--payload", '{"body": "hello"}',
    )  # fmt: skip
    # The gate stamps it at once; the tier is the email handler's, not the person's say-so.
    assert (intent["status"], intent["tier"], intent["payload"]) == (
        "requires_approval",
        "external",
        {"body": "hello"},
    )
    assert intent["origin"] == {"tick_kind": "cli", "tainted": False}
    assert any(r.startswith("gate.external_or_irreversible") for r in intent["verdict_reasons"])
    listed = cli.json("intents", "--profile", "me", "--status", "requires_approval")
    assert [i["id"] for i in listed] == [intent["id"]]
    assert cli.json("intents", "--profile", "me", "--status", "proposed") == []


def test_intents_added_by_hand_are_gated_at_once(cli: Cli) -> None:
    """A reversible note is ready at once and cannot be approved; a type no handler carries out
    (`emial`, `draft`, `wire_transfer`) is refused with the valid types, and nothing is stored."""
    note = cli.json("intents", "add", "--profile", "me", "--type", "note", "--title", "n")
    assert (note["status"], note["verdict"]) == ("ready", "allowed")
    assert "requires_approval" in cli.fails("approve", str(note["id"]), "--profile", "me")
    for typo in ("emial", "draft", "wire_transfer"):
        refused = cli.fails("intents", "add", "--profile", "me", "--type", typo, "--title", "w")
        assert f"unknown action type {typo!r}: use one of note, wiki_write, draft_prep" in refused
    assert [i["id"] for i in cli.json("intents", "--profile", "me")] == [note["id"]]


def test_an_email_needs_one_recipient_and_a_body_when_it_is_added(cli: Cli) -> None:
    """`intents add --type email` refuses two recipients or no body at once (exit 2): it never
    reaches the approval queue to fail after the person approved it."""
    two = cli.fails("intents", "add", "--profile", "me", "--type", "email", "--title", "Hi",
                    "--recipient", "a@b.org, c@d.org", "--payload", '{"body": "hello"}')  # fmt: skip
    assert "exactly one address" in two
    bodiless = cli.fails("intents", "add", "--profile", "me", "--type", "email", "--title", "Hi",
                         "--recipient", "a@b.org")  # fmt: skip
    assert "payload.body is required" in bodiless
    assert cli.json("intents", "--profile", "me") == []
    assert "one of note, wiki_write, draft_prep" in cli.run("intents", "add", "--help").stdout


def test_approve_and_deny_an_intent_awaiting_approval(cli: Cli) -> None:
    """An email staged by hand waits for the person; approving it works once, then deny refuses."""
    intent = cli.json(
        "intents", "add", "--profile", "me", "--type", "email", "--title", "Hi",
        "--recipient", "a@example.org", "--payload", '{"body": "hello"}',
    )  # fmt: skip
    assert intent["status"] == "requires_approval"
    decision = cli.json("approve", str(intent["id"]), "--profile", "me", "--note", "ok", "--by", "me")
    assert (decision["kind"], decision["note"], decision["by"]) == ("approve", "ok", "me")
    assert "is approved" in cli.fails("deny", str(intent["id"]), "--profile", "me")
    assert cli.json("intents", "--profile", "me")[0]["decision_id"] == decision["id"]


def test_listings_render_tables(cli: Cli) -> None:
    """Without --json every listing prints a table with its title."""
    cli.run("task", "add", "T", "--profile", "me")
    for command, title in [("board", "board of me"), ("plan", "plan of me"), ("progress", "progress of me"),
                           ("intents", "intents of me"), ("goal", "goal models of me")]:  # fmt: skip
        args = [command, "show"] if command == "goal" else [command]
        assert title in cli.run(*args, "--profile", "me").stdout


def test_goal_set_and_activate(cli: Cli) -> None:
    """A new goal version is a draft until activated; activating retires the old one."""
    draft = cli.json("goal", "set", "Ship v2", "--profile", "me")
    assert draft["status"] == "draft"
    cli.run("goal", "activate", str(draft["version"]), "--profile", "me")
    assert [g["status"] for g in cli.json("goal", "show", "--profile", "me")] == ["retired", "active"]
    assert cli.json("plan", "--profile", "me")["goal"]["version"] == draft["version"]


def test_progress_json_is_a_list(cli: Cli) -> None:
    """`progress --last N --json` prints a JSON list (empty before any tick ran)."""
    assert cli.json("progress", "--last", "3", "--profile", "me") == []


def test_sql_metacharacters_are_kept_verbatim(cli: Cli) -> None:
    """SQL in titles, notes and payloads is stored as text and the store still works."""
    task = cli.json("task", "add", METACHARS, "--notes", METACHARS, "--profile", "me")
    intent = cli.json(
        "intents", "add", "--profile", "me", "--type", "note", "--title", METACHARS,
        "--payload", json.dumps({METACHARS: METACHARS}),
    )  # fmt: skip
    assert (task["title"], task["notes"], intent["title"]) == (METACHARS, METACHARS, METACHARS)
    assert cli.json("intents", "--profile", "me")[0]["payload"] == {METACHARS: METACHARS}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["board", "--profile", "ghost"], "no profile 'ghost'"),
        (["approve", "999", "--profile", "me"], "no intent 999 in profile 'me'"),
        (["task", "done", "999", "--profile", "me"], "no task 999 in profile 'me'"),
        (["goal", "activate", "7", "--profile", "me"], "no goal model version 7"),
        (["init", "--profile", "me", "--goal", "again"], "profile 'me' already exists"),
        (["init", "--profile", "x"], "--goal TITLE or --from FILE"),
        (
            ["intents", "add", "--profile", "me", "--type", "n", "--title", "t", "--payload", "[1"],
            "not valid JSON",
        ),
        (
            ["intents", "add", "--profile", "me", "--type", "n", "--title", "t", "--payload", "[1]"],
            "JSON object",
        ),
        (["task", "add", " ", "--profile", "me"], "must not be empty"),
        (["approve", "99999999999999999999", "--profile", "me"], "not in the range"),
        (["deny", "--profile", "me", "--", "-3"], "not in the range"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(cli: Cli, args: list[str], message: str) -> None:
    """Unknown ids, a wrong profile and malformed input exit 2 with one clear line, no traceback."""
    assert message in cli.fails(*args)


def test_invalid_utf8_argument_exits_2(cli: Cli) -> None:
    """Invalid UTF-8 bytes on the command line are refused by field name, not stored or crashed on."""
    assert "title: not valid UTF-8" in cli.fails("task", "add", b"bad \xff\xfe title", "--profile", "me")
    assert cli.json("board", "--profile", "me")["tasks"] == []


def test_another_profiles_intent_is_not_found(cli: Cli) -> None:
    """An intent id from one profile cannot be approved from another."""
    cli.run("init", "--profile", "other", "--goal", "g")
    intent = cli.json("intents", "add", "--profile", "me", "--type", "note", "--title", "t")
    assert f"no intent {intent['id']} in profile 'other'" in cli.fails(
        "approve", str(intent["id"]), "--profile", "other"
    )


def test_migrate_reports_schema_version(tmp_path: Path) -> None:
    """`migrate` on a fresh store applies every migration and reports the version."""
    out = Cli(tmp_path).run("migrate").stdout
    versions = [v for v, _, _ in migrations("sqlite")]
    assert ", ".join(f"{v:04d}" for v in versions) in out
    assert f"schema version {versions[-1]}" in out


def test_store_url_password_never_printed(tmp_path: Path) -> None:
    """An unreachable PostgreSQL URL is reported without its password."""
    runner = Cli(tmp_path)
    runner.env["TICKLOOP_STORE"] = "postgresql://me:hunter2@127.0.0.1:1/db"
    err = runner.fails("board")
    assert "postgresql://me:***@127.0.0.1:1/db" in err
    assert "hunter2" not in err
