"""The real local model (llama.cpp + SmolLM2-135M, the `local` extra): our client path against curl.

1. Time to first token and tokens per second through tickloop's provider (``OpenAICompatModel.stream``)
   as ratios to ``curl -sN`` posting the same request body to the same server in the same run:
   interleaved rounds, medians. curl's figures are its own (``time_starttransfer``, ``time_total``),
   so starting the curl process is not counted against it. Target: time to first token <= 1.2.
2. Cold start of a process that calls the local model once (one structured ActionIntentOut call),
   its CPU time split into the interpreter (``python -c pass``), tickloop's imports, the SDK's
   imports (openai, done lazily by the first call) and the call itself. CPU is the client process's
   only; the server's work is the model's, not ours.

Without the `local` extra it says so and returns (``make local`` installs it).
"""

from __future__ import annotations

import asyncio
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import report
from tickloop.models import ChatMessage, Finished, OpenAICompatModel, TextDelta
from tickloop.models.local_server import INSTALL_HINT, MODEL_ALIAS, missing_parts, running

PROMPT = "Tell me about the sea in a few sentences."
MAX_TOKENS = 48

#: the phases of the cold-start process; each script contains the previous one
_IMPORTS = (
    "import asyncio\n"
    "from tickloop.models.openai_compat import OpenAICompatModel\n"
    "from tickloop.models.structured import complete_structured\n"
    "from tickloop.models.base import ChatMessage\n"
    "from tickloop.operator.schemas import ActionIntentOut\n"
)
_SDK = _IMPORTS + "import httpx2, openai\n"
_CALL = (
    _SDK
    + "model = OpenAICompatModel('local', base_url=BASE, model='smollm2', temperature=0, max_tokens=96)\n"
    "messages = [ChatMessage('user', 'Propose one action to tidy the garage, as JSON.')]\n"
    "asyncio.run(complete_structured(model, messages, ActionIntentOut))\n"
)
PHASES = {
    "interpreter": "pass",
    "tickloop imports": _IMPORTS,
    "+ openai SDK": _SDK,
    "+ one model call": _CALL,
}


def _body() -> dict[str, object]:
    return {
        "model": MODEL_ALIAS,
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }


def _curl(base_url: str, body_file: Path) -> tuple[float, float, int]:
    """(time to first byte, total, completion tokens) as curl measures them."""
    out = subprocess.run(
        ["curl", "-sN", "-H", "Content-Type: application/json", "--data-binary", f"@{body_file}",
         "-w", "\nTIMES %{time_starttransfer} %{time_total}\n", f"{base_url}/chat/completions"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    tokens = 0
    first = total = 0.0
    for line in out.splitlines():
        if line.startswith("data: {") and '"usage"' in line:
            usage = json.loads(line[6:]).get("usage") or {}
            tokens = int(usage.get("completion_tokens") or tokens)
        elif line.startswith("TIMES "):
            first, total = (float(x) for x in line.split()[1:])
    return first, total, tokens


async def _ours(model: OpenAICompatModel) -> tuple[float, float, int]:
    messages = [ChatMessage("user", PROMPT)]
    started = time.perf_counter()
    first = 0.0
    tokens = 0
    async for event in model.stream(messages):
        if isinstance(event, TextDelta) and event.text and not first:
            first = time.perf_counter() - started
        elif isinstance(event, Finished) and event.usage is not None:
            tokens = event.usage.output_tokens
    return first, time.perf_counter() - started, tokens


def _streaming(base_url: str, rounds: int) -> None:
    model = OpenAICompatModel(
        "local", base_url=base_url, model=MODEL_ALIAS, temperature=0, max_tokens=MAX_TOKENS
    )
    with tempfile.TemporaryDirectory() as folder:
        body_file = Path(folder) / "body.json"
        body_file.write_text(json.dumps(_body()))
        samples: dict[str, list[tuple[float, float, int]]] = {"curl": [], "tickloop": []}
        _curl(base_url, body_file)  # warm-up: the server's prompt cache, our imports
        asyncio.run(_ours(model))
        for _ in range(rounds):  # interleaved, so drift hits both alike
            samples["curl"].append(_curl(base_url, body_file))
            samples["tickloop"].append(asyncio.run(_ours(model)))
    print(f"{rounds} streamed answers of <= {MAX_TOKENS} tokens each (temperature 0), interleaved; medians")
    firsts = {k: statistics.median(s[0] for s in v) * 1000 for k, v in samples.items()}
    speeds = {k: statistics.median(s[2] / s[1] for s in v) for k, v in samples.items()}
    report("local model: time to first token", firsts["tickloop"], firsts["curl"], unit="ms", target="<= 1.2")
    report("local model: tokens per second", speeds["tickloop"], speeds["curl"], unit="/s", target=">= 0.9")


def _cpu_of(script: str, base_url: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh ``python -c script`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"BASE = {base_url!r}\n{script}"], check=True, timeout=120)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def _cold_start(base_url: str, rounds: int) -> None:
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in PHASES}
    _cpu_of(_CALL, base_url)  # warm-up: bytecode caches, the server's prompt cache
    for _ in range(rounds):
        for name, script in PHASES.items():
            samples[name].append(_cpu_of(script, base_url))
    cpu = {name: statistics.median(s[0] for s in v) * 1000 for name, v in samples.items()}
    wall = {name: statistics.median(s[1] for s in v) * 1000 for name, v in samples.items()}
    print(f"cold start of a process making one structured call, {rounds} rounds; medians, CPU of the client")
    previous = 0.0
    for name in PHASES:
        report(f"cold start CPU: {name} (cumulative)", cpu[name], cpu["interpreter"], unit="ms")
        print(
            f"{'':<48} this phase {cpu[name] - previous:7.1f} ms CPU; wall (cumulative) {wall[name]:7.1f} ms"
        )
        previous = cpu[name]


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's signature)
    missing = missing_parts()
    if missing:
        print(f"the `local` extra is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}. Skipped.")
        return
    if shutil.which("curl") is None:
        print("curl is not installed: the client-overhead figure needs it as the baseline. Skipped.")
        return
    with tempfile.TemporaryDirectory() as folder, running(0, log_path=Path(folder) / "server.log") as server:
        _streaming(server.base_url, 5 if quick else 15)
        _cold_start(server.base_url, 3 if quick else 7)
