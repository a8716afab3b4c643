"""Cross-check the OpenAI-compatible provider against an independent mock: ``@copilotkit/aimock``.

Not part of ``make test`` (it needs npm and the registry): ``.venv/bin/python scripts/check_aimock.py``.
It installs aimock into ``~/.cache/tickloop/aimock`` once, then for a plain run and each chaos mode
(500s, malformed JSON, disconnects, 429s) starts ``aimock`` on 127.0.0.1 and checks that tickloop
either streams the fixture's answer or raises ``ModelError``, and never hangs or raises anything else.
Then, with aimock's tool-call fixture, it checks that a streamed tool call (its arguments in 3-byte
chunks) is assembled into one ``ToolCalls`` with the fixture's name and arguments.
Exits 1 if any mode misbehaves.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tickloop.errors import ModelError
from tickloop.models import ChatMessage, OpenAICompatModel, TextDelta
from tickloop.models.base import ToolCalls, ToolSpec

VERSION = "1.43.0"
HOME = Path.home() / ".cache" / "tickloop" / "aimock"
PACKAGE = HOME / "node_modules" / "@copilotkit" / "aimock"
MODES: dict[str, list[str]] = {
    "plain": [],
    "chaos-drop": ["--chaos-drop", "1"],
    "chaos-malformed": ["--chaos-malformed", "1"],
    "chaos-disconnect": ["--chaos-disconnect", "1"],
    "chaos-ratelimit": ["--chaos-ratelimit", "1"],
}
EXPECTED = "Hello! How can I help you today?"


def install() -> None:
    if not PACKAGE.is_dir():
        HOME.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", f"@copilotkit/aimock@{VERSION}"],
            cwd=HOME,
            check=True,
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def exercise(base_url: str) -> str:
    model = OpenAICompatModel("aimock", base_url=base_url, model="gpt-4o-mini", api_key="sk-x", timeout_s=3)
    try:
        text = "".join(
            [e.text async for e in model.stream([ChatMessage("user", "hello")]) if isinstance(e, TextDelta)]
        )
    except ModelError as exc:
        return f"ModelError: {exc}"
    return "ok" if text == EXPECTED else f"WRONG TEXT {text!r}"


async def exercise_tools(base_url: str) -> str:
    model = OpenAICompatModel("aimock", base_url=base_url, model="gpt-4o-mini", api_key="sk-x", timeout_s=3)
    spec = ToolSpec("get_weather", "the weather", {"type": "object", "properties": {}})
    try:
        events = [e async for e in model.stream([ChatMessage("user", "weather?")], tools=[spec])]
    except ModelError as exc:
        return f"ModelError: {exc}"
    calls = [c for e in events if isinstance(e, ToolCalls) for c in e.calls]
    wanted = [("get_weather", {"location": "San Francisco", "unit": "fahrenheit"})]
    got = [(c.name, json.loads(c.arguments)) for c in calls]
    return "ok" if got == wanted else f"WRONG CALLS {got!r}"


def run_mode(fixture: Path, flags: list[str], check: Any) -> str:
    port = free_port()
    cli = [str(PACKAGE / "dist" / "cli.js"), "-p", str(port), "-f", str(fixture), "--log-level", "silent"]
    proc = subprocess.Popen(["node", *cli, "-c", "3", *flags])
    try:
        time.sleep(1.0)  # aimock prints nothing when silent; its start-up takes well under a second
        return str(asyncio.run(asyncio.wait_for(check(f"http://127.0.0.1:{port}/v1"), timeout=10)))
    finally:
        proc.terminate()
        proc.wait()


def main() -> int:
    install()
    fixtures = PACKAGE / "fixtures" / "example-greeting.json"
    failures = 0
    for mode, flags in MODES.items():
        port = free_port()
        cli = [
            str(PACKAGE / "dist" / "cli.js"),
            "-p",
            str(port),
            "-f",
            str(fixtures),
            "--log-level",
            "silent",
        ]
        proc = subprocess.Popen(["node", *cli, "-c", "5", *flags])
        try:
            time.sleep(1.0)  # aimock prints nothing when silent; its start-up takes well under a second
            outcome = asyncio.run(asyncio.wait_for(exercise(f"http://127.0.0.1:{port}/v1"), timeout=10))
        finally:
            proc.terminate()
            proc.wait()
        good = outcome == "ok" if mode == "plain" else outcome.startswith("ModelError")
        failures += not good
        print(f"{'PASS' if good else 'FAIL'} {mode}: {outcome}")
    outcome = run_mode(PACKAGE / "fixtures" / "example-tool-call.json", [], exercise_tools)
    failures += outcome != "ok"
    print(f"{'PASS' if outcome == 'ok' else 'FAIL'} tool-call: {outcome}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
