"""`make demo`: the main job on embedded defaults (the offline model), in a temporary directory.

A scripted chat: one natural turn, `/tick 3`, `/tick status`; then the audit ledger as a table and
its verification. Every step is the real CLI as a person would run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = "hello\n/tick 3\n/tick status\n"


def tickloop(*args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None) -> int:
    """Run the CLI; its output goes straight to the terminal."""
    command = [sys.executable, "-m", "tickloop", *args]
    return subprocess.run(command, cwd=cwd, input=stdin, text=True, env=env, check=False).returncode


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_DELAY_MS"] = "250"  # a visible pause between steps; the shipped default is 1000
    with tempfile.TemporaryDirectory(prefix="tickloop-demo-") as tmp:
        work = Path(tmp)
        print(
            f"== scripted chat in {work} (offline model):  printf {SCRIPT!r} | tickloop chat --session demo\n"
        )
        if tickloop("chat", "--model", "offline", "--session", "demo", cwd=work, stdin=SCRIPT, env=env):
            return 1
        ledger = work / ".tickloop-audit" / "session-demo.jsonl"
        print("\n== the audit ledger:  tickloop audit show")
        tickloop("audit", "show", str(ledger), cwd=work, env=env)
        print("== its verification:  tickloop audit verify")
        code = tickloop("audit", "verify", str(ledger), cwd=work, env=env)
    print(
        "\nNext: talk to a real model with `tickloop chat --model NAME` (README: Using a real model),\n"
        "say something, then `/tick 5`; `tickloop audit verify .tickloop-audit/*.jsonl` checks the run."
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
