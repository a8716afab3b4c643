"""The real local model (llama.cpp + SmolLM2-135M, the `local` extra): our client path against curl.

1. Time to first token and tokens per second through tickloop's provider (``OpenAICompatModel.stream``)
   as ratios to ``curl -sN`` posting the same request body to the same server in the same run.
   curl is timed by its own ``--trace-time`` trace, from its connection attempt to the first
   received content chunk, so starting a process is not counted against it; tickloop from the call
   to ``stream()`` (building the request included) to the first ``TextDelta``. Each round sends the
   same body through every client, in an order rotated per round (whoever follows an idle pause
   pays for waking the server's threads); medians.

   - **A time step** (the target, <= 1.2): what a chat session sends for ``/tick``: the
     conversation so far, a new last answer and the ``tick`` message, so the server evaluates the
     ~15 new tokens as in a real session (the prefix is in its cache), then one token. tickloop
     is the provider as a chat session uses it: the Agent asks it to keep its connection
     (``keep_connections()``) for the session. The same provider connecting anew per call (a
     one-shot operator tick) is reported beside it: on loopback that connect costs ~1.3 ms (anyio
     resolves even ``127.0.0.1`` in a worker thread).
   - **The floor**: one identical request over and over, its whole prompt cached, one token: the
     server does almost nothing (~4 ms), so the ratio is our client's fixed cost in full (~1 ms of
     Python). No target; printed so that the overhead stays visible in milliseconds.
   - **Tokens per second** over answers of ``MAX_TOKENS``: content chunks (one token each;
     llama-cpp-python's stream carries no usage).
2. Cold start of a process that calls the local model once (one structured ActionIntentOut call),
   its CPU time split into the interpreter (``python -c pass``), tickloop's imports, the SDK's
   imports (openai, done lazily by the first call) and the call itself. CPU is the client process's
   only; the server's work is the model's, not ours.
4. Twenty real fast ticks (``bench.action_rates``) over varied goals and boards, with and
   without the grammar side by side: schema-valid, known action type (a registered handler runs
   it), executable or correctly gated (``ready`` and its handler accepts it dry, or waiting at
   ``requires_approval`` for an external or spend type). Target: >= 80% known and executable-or-gated
   with the grammar; the rates without it are the baseline.
3. How often the fast tick's action intent is schema-valid JSON with the grammar constraint
   (``responseFormat = "json_object_schema"``, the schema compiled to a grammar by the server) and
   without it (``"none"``), over the same varied goals as the ``local_model`` fast-tick test. The
   baseline is the rate without the grammar; the issue asks for 100% with it.

Without the `local` extra it says so and returns (``make local`` installs it).
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._util import report
from bench.action_rates import SCENARIOS, measure
from bench.structured_load import GOALS, IntentRate, intent_rate
from tickloop.models import ChatMessage, OpenAICompatModel, TextDelta
from tickloop.models.local_server import INSTALL_HINT, MODEL_ALIAS, missing_parts, running
from tickloop.models.openai_compat import ResponseFormat

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


def _body(messages: list[ChatMessage], max_tokens: int) -> dict[str, object]:
    return {
        "model": MODEL_ALIAS,
        "messages": [m.to_wire() for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},  # what our provider sends (the server ignores it)
        "temperature": 0,
        "max_tokens": max_tokens,
    }


def _floor(_sample: int) -> list[ChatMessage]:
    """The same request every time: the server's prompt cache holds all of it."""
    return [ChatMessage("user", PROMPT)]


def _time_step(sample: int) -> list[ChatMessage]:
    """A chat session's ``/tick`` request: the conversation, a last answer new to the server, the
    time step (the default policy's text). Its prefix is in the server's cache, the rest is not."""
    answer = f"The sea covers most of the planet ({sample}). It is deep, cold and full of life."
    return [ChatMessage("user", PROMPT), ChatMessage("assistant", answer), ChatMessage("user", "tick")]


def _curl_command(base_url: str, body_file: Path, trace_file: Path) -> list[str]:
    return ["curl", "-sN", "--trace-ascii", str(trace_file), "--trace-time", "-o", "/dev/null",
            "-H", "Content-Type: application/json", "--data-binary", f"@{body_file}",
            f"{base_url}/chat/completions"]  # fmt: skip


#: a ``--trace-time`` line: ``HH:MM:SS.micro`` and what happened (data lines follow it)
_TRACE_EVENT = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) (.*)$")
#: a data line of ``--trace-ascii``: a hex offset, then the bytes (64 per line)
_TRACE_DATA = re.compile(r"^[0-9a-f]{4}: ?(.*)$")


def _trace_events(text: str) -> list[tuple[float, str, str]]:
    """(seconds, event, its data) per event of a ``curl --trace-ascii --trace-time`` file."""
    events: list[tuple[float, str, list[str]]] = []
    for line in text.splitlines():
        stamp = _TRACE_EVENT.match(line)
        data = _TRACE_DATA.match(line)
        if stamp:
            hours, minutes, seconds, what = stamp.groups()
            events.append((int(hours) * 3600 + int(minutes) * 60 + float(seconds), what, []))
        elif data and events:
            events[-1][2].append(data.group(1))
    return [(at, what, "".join(parts)) for at, what, parts in events]


def _content_chunks(data: str) -> int:
    return data.count('"content": "') - data.count('"content": ""')


def _curl(command: list[str], trace_file: Path) -> Sample:
    """(time to first token, total, content chunks) of one ``curl -sN``, from its own trace.

    Timed from curl's connection attempt (its first trace event) to the first received data that
    holds a content chunk, by curl's own clock: curl's process start-up is not counted against it,
    and nothing is read through a pipe while it runs. (llama-cpp-python sends the response headers
    before the first token, so ``time_starttransfer`` would not be a time to first token.)
    """
    subprocess.run(command, check=True, timeout=120)
    events = _trace_events(trace_file.read_text(errors="replace"))
    start = events[0][0]
    received = [(at, _content_chunks(data)) for at, what, data in events if what.startswith("<= Recv data")]
    first = next(at for at, chunks in received if chunks)
    return first - start, received[-1][0] - start, sum(chunks for _, chunks in received)


async def _ours(model: OpenAICompatModel, messages: list[ChatMessage]) -> Sample:
    started = time.perf_counter()
    first = 0.0
    chunks = 0
    async for event in model.stream(messages):
        if isinstance(event, TextDelta) and event.text:
            chunks += 1
            first = first or time.perf_counter() - started
    return first, time.perf_counter() - started, chunks


#: the provider as a chat session uses it (a kept connection), and connecting per call (a one-shot tick)
SESSION, ONE_SHOT = "tickloop", "tickloop, a connection per call"
#: the clients compared, in their order of the first round
_CLIENTS = ("curl", SESSION, ONE_SHOT)


async def _rounds(
    base_url: str, request: Callable[[int], list[ChatMessage]], max_tokens: int, rounds: int
) -> dict[str, list[Sample]]:
    """``rounds`` rounds in one event loop, as in a chat session (the provider keeps one client per
    loop; building it costs ~20 ms, paid once per session, not per answer). A round sends one
    request through every client, in an order rotated per round, so that drift and the position
    after curl (an idle pause for the server) hit all alike."""
    session, one_shot = (
        OpenAICompatModel("local", base_url=base_url, model=MODEL_ALIAS, temperature=0, max_tokens=max_tokens)
        for _ in range(2)
    )
    session.keep_connections()  # what the Agent does for its session
    models = {SESSION: session, ONE_SHOT: one_shot}
    samples: dict[str, list[Sample]] = {name: [] for name in _CLIENTS}
    with tempfile.TemporaryDirectory() as folder:
        body_file, trace_file = Path(folder) / "body.json", Path(folder) / "trace.txt"
        command = _curl_command(base_url, body_file, trace_file)
        for round_ in range(-1, rounds):  # round -1 warms up: imports, clients, the server's cache
            turn = round_ % len(_CLIENTS)
            order = _CLIENTS[turn:] + _CLIENTS[:turn]
            for position, name in enumerate(order):
                messages = request(round_ * len(_CLIENTS) + position)
                if name == "curl":
                    body_file.write_text(json.dumps(_body(messages, max_tokens)))
                    sample = _curl(command, trace_file)  # blocking on purpose: nothing else runs
                else:
                    sample = await _ours(models[name], messages)
                if round_ >= 0:
                    samples[name].append(sample)
    for model in models.values():
        await model.aclose()
    return samples


def _streaming(base_url: str, step_rounds: int, floor_rounds: int, speed_rounds: int) -> None:
    steps = asyncio.run(_rounds(base_url, _time_step, 1, step_rounds))
    floor = asyncio.run(_rounds(base_url, _floor, 1, floor_rounds))
    speeds = asyncio.run(_rounds(base_url, _floor, MAX_TOKENS, speed_rounds))
    print(
        f"time to first token: {step_rounds} time steps and {floor_rounds} cached one-token requests per "
        f"client; tokens per second: {speed_rounds} answers of <= {MAX_TOKENS} tokens. Temperature 0, "
        "rotated order, medians; curl timed by its --trace-time from its connect, tickloop from the call "
        "to stream(); `tickloop` keeps its connection as a chat session does"
    )
    first, least = _first_token_ms(steps), _first_token_ms(floor)
    speed = {k: statistics.median(s[2] / s[1] for s in v) for k, v in speeds.items()}
    report("local model: time to first token, a time step", first[SESSION], first["curl"], unit="ms",
           target="<= 1.2")  # fmt: skip
    report("  the same, connecting per call (one-shot)", first[ONE_SHOT], first["curl"], unit="ms")
    report("  floor: cached prompt, one token", least[SESSION], least["curl"], unit="ms")
    report("  floor, connecting per call", least[ONE_SHOT], least["curl"], unit="ms")
    print(
        f"{'':<48} our client's own cost: {least[SESSION] - least['curl']:+.2f} ms per call on a kept "
        f"connection, {least[ONE_SHOT] - least['curl']:+.2f} ms connecting per call"
    )
    report("local model: tokens per second", speed[SESSION], speed["curl"], unit="/s", target=">= 0.9")


def _first_token_ms(samples: dict[str, list[Sample]]) -> dict[str, float]:
    return {client: statistics.median(s[0] for s in taken) * 1000 for client, taken in samples.items()}


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


#: what the fast tick's intent needs to close its JSON under the grammar (its strings capped at 96)
INTENT_MAX_TOKENS = 160


def _intent_rate(base_url: str, response_format: ResponseFormat, runs: int) -> IntentRate:
    model = OpenAICompatModel(
        "local", base_url=base_url, model=MODEL_ALIAS, temperature=0, max_tokens=INTENT_MAX_TOKENS,
        response_format=response_format,
    )  # fmt: skip
    return asyncio.run(intent_rate(model, GOALS[:runs]))


def _structured(base_url: str, runs: int) -> None:
    with_grammar = _intent_rate(base_url, "json_object_schema", runs)
    without = _intent_rate(base_url, "none", runs)
    print(
        f"{runs} fast-tick action intents (varied goals, temperature 0, <= {INTENT_MAX_TOKENS} tokens): "
        f"schema-valid with the grammar {with_grammar}, without {without}"
    )
    report(
        "local model: schema-valid intents, grammar vs not", with_grammar.rate * 100, without.rate * 100,
        unit="%", target="100% with the grammar",
    )  # fmt: skip


def _action_rates(base_url: str, runs: int) -> None:
    """The three rates of real fast ticks (``bench.action_rates``), with the grammar and
    without it (the baseline), side by side; each tick asks for its default 384 tokens."""
    rates = {}
    for response_format in ("json_object_schema", "none"):
        model = OpenAICompatModel(
            "local", base_url=base_url, model=MODEL_ALIAS, temperature=0, timeout_s=300,
            response_format=response_format,
        )  # fmt: skip
        rates[response_format] = measure(model, SCENARIOS[:runs])
    grammar, free = rates["json_object_schema"], rates["none"]
    print(f"{runs} real fast ticks (varied goals and boards, temperature 0), one round:")
    print(f"  {'':<22} {'with the grammar':>18} {'without':>10}")
    for label, attribute in (
        ("schema-valid", "schema_valid"),
        ("known action type", "known_type"),
        ("executable-or-gated", "executable_or_gated"),
    ):
        print(f"  {label:<22} {getattr(grammar, attribute):>18.0%} {getattr(free, attribute):>10.0%}")
    for line in grammar.misses():
        print(f"  missed with the grammar: {line}")
    report(
        "local model: known action type, grammar vs not", grammar.known_type * 100,
        free.known_type * 100, unit="%", target=">= 80% with the grammar",
    )  # fmt: skip
    report(
        "local model: executable-or-gated, grammar vs not", grammar.executable_or_gated * 100,
        free.executable_or_gated * 100, unit="%", target=">= 80% with the grammar",
    )  # fmt: skip


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's signature)
    missing = missing_parts()
    if missing:
        print(f"the `local` extra is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}. Skipped.")
        return
    if shutil.which("curl") is None:
        print("curl is not installed: the client-overhead figure needs it as the baseline. Skipped.")
        return
    with tempfile.TemporaryDirectory() as folder, running(0, log_path=Path(folder) / "server.log") as server:
        _streaming(server.base_url, 10 if quick else 40, 20 if quick else 60, 4 if quick else 12)
        _cold_start(server.base_url, 3 if quick else 7)
        _structured(server.base_url, 5 if quick else len(GOALS))
        _action_rates(server.base_url, 5 if quick else len(SCENARIOS))
