"""`make demo`: the main job on embedded defaults (SQLite, the offline model), in a temporary directory.

A compressed operator day, every step the real CLI as a person or a timer would run it: a profile
with a goal and board tasks; observing a sample git repository and Maildir; the daily review; fast
ticks staging a note, a spend and an email (the last two wait for the person); a dry-run executor pass
printing the seed's log lines; the person approving the email and a live pass (TICKLOOP_DRY_RUN=0 for
that step alone) delivering it to a local SMTP sink; consolidation and a monitor pass; a summary;
then the Tick Protocol chat demo (with a workspace tool step) and its verified ledger.
"""

from __future__ import annotations

import contextlib
import json
import mailbox
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

GOAL = "Ship the quarterly report"
TASKS = [
    "Write the report outline",
    "Buy Acme 42.00: a binder for the printed report",
    "Email ada@example.org: the draft report is ready for review",
]
#: "list files" makes the offline model call the workspace tool list_dir: a tool step, no network
CHAT_SCRIPT = "hello\nlist files\n/tick 3\n/tick status\n"
CHAT_ARGS = ("--model", "offline", "--session", "demo", "--tools", "workspace")


@dataclass
class Sink:
    """A local SMTP server that keeps what it receives."""

    port: int
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)

    async def handle_DATA(self, _server: object, _session: object, envelope: object) -> str:  # noqa: N802
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))  # type: ignore[attr-defined]
        return "250 OK"


@contextlib.contextmanager
def smtp_sink() -> Iterator[Sink]:
    from aiosmtpd.controller import Controller  # noqa: PLC0415  (a dev dependency; `make demo` installs it)

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = Sink(port)
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


def sample_sources(work: Path) -> None:
    """A git repository with one commit, and a Maildir with one message."""
    repo = work / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Demo", "-c", "user.email=demo@example.org"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (repo / "report.md").write_text("# Quarterly report\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Start the report"], check=True)
    box = mailbox.Maildir(work / "Maildir", create=True)
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ada@example.org", "me@example.org", "Report?"
    message.set_content("Hi! When can I see the draft of the quarterly report?")
    box.add(message)


def config_text(work: Path, smtp_port: int) -> str:
    return f"""[tick]
delayMs = 250
[[sources.git]]
path = "{work / "repo"}"
[[sources.maildirs]]
path = "{work / "Maildir"}"
[handlers]
notesDir = "{work / "notes"}"
draftsDir = "{work / "drafts"}"
[smtp]
host = "127.0.0.1"
port = {smtp_port}
security = "plain"
senders = ["operator@example.org"]
[[notify.channels]]
kind = "file"
path = "{work / "notifications.jsonl"}"
"""


class Day:
    """Runs the CLI in the demo's environment and prints each step."""

    def __init__(self, work: Path, smtp_port: int) -> None:
        (work / "config.toml").write_text(config_text(work, smtp_port))
        self.work = work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
        self.env.update(
            TICKLOOP_STORE=f"sqlite:///{work / 'operator.db'}",
            TICKLOOP_CONFIG=str(work / "config.toml"),
            TICKLOOP_DELAY_MS="250",
            XDG_STATE_HOME=str(work / "state"),
            XDG_DATA_HOME=str(work / "data"),
        )

    def run(
        self, *args: str, live: bool = False, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "TICKLOOP_DRY_RUN": "0"} if live else self.env
        command = [sys.executable, "-m", "tickloop", *args]
        result = subprocess.run(
            command, env=env, cwd=self.work, input=stdin, capture_output=True, text=True, check=False
        )
        note = "    (TICKLOOP_DRY_RUN=0 for this step only)" if live else ""
        shown = "tickloop " + shlex.join(args) + note
        print(f"\n$ {shown}")
        for line in (result.stdout + result.stderr).rstrip().splitlines():
            print(f"  {line}")
        if result.returncode not in (0,):
            print(f"  (exit {result.returncode})")
        return result

    def intent_id(self, action_type: str) -> str:
        """The id of the intent of ``action_type`` waiting for approval (looked up quietly)."""
        command = [
            sys.executable,
            "-m",
            "tickloop",
            "operator",
            "intents",
            "--status",
            "requires_approval",
            "--json",
        ]
        listed = subprocess.run(command, env=self.env, capture_output=True, text=True, check=True).stdout
        return str(next(i["id"] for i in json.loads(listed) if i["action_type"] == action_type))


def operator_day(work: Path, sink: Sink) -> int:
    from rich.progress import Progress  # noqa: PLC0415

    day = Day(work, sink.port)
    sample_sources(work)
    tasks = [arg for task in TASKS for arg in ("--task", task)]
    steps = [
        (
            "a profile with a goal and board tasks",
            lambda: day.run("operator", "init", "--goal", GOAL, *tasks),
        ),
        ("observe: a git repository and a Maildir (tainted)", lambda: day.run("operator", "tick", "observe")),
        ("the daily review writes the plan", lambda: day.run("operator", "tick", "slow")),
        ("fast tick 1: the current step becomes a note", lambda: day.run("operator", "tick", "fast")),
        ("fast tick 2: a purchase: the gate wants approval", lambda: day.run("operator", "tick", "fast")),
        ("fast tick 3: waits for the person's decision", lambda: day.run("operator", "tick", "fast")),
        ("the person approves the purchase", lambda: day.run("operator", "approve", day.intent_id("spend"))),
        ("fast tick 4: an email: the gate wants approval", lambda: day.run("operator", "tick", "fast")),
        ("executor, dry run: the seed's log lines", lambda: day.run("operator", "tick", "executor")),
        ("the person approves the email", lambda: day.run("operator", "approve", day.intent_id("email"))),
        ("executor, live: the email goes out", lambda: day.run("operator", "tick", "executor", live=True)),
        ("consolidation: the state of play", lambda: day.run("operator", "tick", "consolidate")),
        ("the stall monitor, from outside", lambda: day.run("operator", "monitor")),
        ("the summary", lambda: day.run("operator", "status")),
    ]
    failures = 0
    with Progress(transient=False) as progress:
        task = progress.add_task("operator day", total=len(steps))
        for title, step in steps:
            progress.console.rule(title)
            failures += step().returncode not in (0,)
            progress.advance(task)
    print(f"\nSMTP sink received {len(sink.received)} message(s):")
    for sender, recipients, _ in sink.received:
        print(f"  from {sender} to {', '.join(recipients)}")
    return failures


def chat_demo(work: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_DELAY_MS"] = "250"  # a visible pause between steps; the shipped default is 1000
    print(f"\n== the Tick Protocol: printf {CHAT_SCRIPT!r} | tickloop chat {' '.join(CHAT_ARGS)}\n")

    def tickloop(*args: str, stdin: str | None = None) -> int:
        command = [sys.executable, "-m", "tickloop", *args]
        return subprocess.run(command, cwd=work, input=stdin, text=True, env=env, check=False).returncode

    if tickloop("chat", *CHAT_ARGS, stdin=CHAT_SCRIPT):
        return 1
    ledger = work / ".tickloop-audit" / "session-demo.jsonl"
    print("\n== the audit ledger:  tickloop audit show")
    tickloop("audit", "show", str(ledger))
    print("== its verification:  tickloop audit verify")
    return tickloop("audit", "verify", str(ledger))


#: where the demo keeps its store for the dashboard: inside the checkout, so two people on one machine
#: (two checkouts) never share or overwrite it, and nobody else's directory is in the way
KEPT = Path(__file__).resolve().parents[1] / ".tickloop-demo"


def keep_for_the_dashboard(work: Path, kept: Path = KEPT) -> Path:
    """Copy the demo's store, sessions and ledgers out of the temporary directory, so the dashboard
    can show them after the demo ends (the copy is replaced by the next demo in this checkout)."""
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(mode=0o700)
    for name in ("operator.db", ".tickloop-sessions", ".tickloop-audit"):
        source = work / name
        if source.is_dir():
            shutil.copytree(source, kept / name)
        elif source.is_file():
            shutil.copy2(source, kept / name)
    return kept


def main(argv: list[str]) -> int:
    """``demo.py [KEEP_DIR]``: KEEP_DIR (default ``.tickloop-demo`` in the checkout) gets the store."""
    with tempfile.TemporaryDirectory(prefix="tickloop-demo-") as tmp, smtp_sink() as sink:
        work = Path(tmp)
        print(f"== a compressed operator day in {work} (SQLite, offline model, dry-run by default)")
        failures = operator_day(work, sink)
        code = chat_demo(work)
        kept = keep_for_the_dashboard(work, Path(argv[1]).resolve() if len(argv) > 1 else KEPT)
    print(
        "\nNext, with your own goal and model (in this checkout; `make demo` installed every extra):\n"
        "  source .venv/bin/activate                 # puts tickloop on PATH (or call .venv/bin/tickloop)\n"
        "  tickloop operator init                    # asks for your goal, tasks, quiet hours, channel\n"
        "  tickloop doctor                           # checks config, store, model, channels, dry-run\n"
        "  tickloop operator run                     # or: tickloop operator install --systemd\n"
        "  tickloop chat --model NAME                # README: Using a real model; then /tick 5"
    )
    print(
        "\nOpen the dashboard on the demo's store (after `source .venv/bin/activate`):\n"
        f"  cd {kept} && TICKLOOP_STORE=sqlite:///{kept / 'operator.db'} tickloop web\n"
        "  then open the one-time login URL it prints (http://127.0.0.1:8765/login?token=...)\n"
        f"  the chat's ledger, kept too: tickloop audit verify {kept}/.tickloop-audit/session-demo.jsonl"
    )
    return 1 if failures or code else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
