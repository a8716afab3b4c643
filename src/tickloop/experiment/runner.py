"""Run an experiment: every session of the grid is a real harness session, scheduled with bounds.

The runner only schedules. Each session is what ``tickloop chat`` would do with the same input: the
same Agent, tick plugin, transcript and ledger (``open_chat_agent``), fed the spec's opening turns
and then ``/tick STEPS --policy ID``. Results stream to disk as each session ends, so memory does
not grow with the session count.

The run directory::

    spec.toml, spec.sha256          the spec as given, and its digest
    sessions/session-<id>.jsonl     one transcript per session
    ledgers/session-<id>.jsonl      one ledger per session (tickloop.audit.v1)
    manifest.jsonl                  started / finished / abandoned records, one JSON object a line
    run.json                        provenance: versions, digests, model ids, generation settings
    run.key                         the secret that keys the export's digests (0600, never exported)

Every line of those files is fsynced on the worker threads of an ``FsyncPool``, in the protocol's
order (``tickloop.harness.durable``): while one session waits for the disk, the others run.

Resuming: a key with a ``finished`` record is skipped. A key ``started`` but never finished (the
process died) gets an ``abandoned`` record and runs afresh as a NEW session (``-a2``); it is never
resumed silently.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tickloop.audit import read_ledger, session_file_name
from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.manifest import MANIFEST, KeyState, Manifest, ManifestWriter, manifest_state
from tickloop.experiment.spec import ALL, SessionPlan, Shard, Spec
from tickloop.harness.durable import FsyncPool
from tickloop.harness.events import AgentEvent, TextStreamed, TurnEnded, TurnStarted
from tickloop.models.base import (
    ChatMessage,
    ChatModel,
    Completion,
    Finished,
    StreamEvent,
    TextDelta,
    ToolSpec,
)
from tickloop.models.offline import OfflineModel

SESSIONS = "sessions"
LEDGERS = "ledgers"


class Progress(Protocol):
    """What the runner reports as it goes (the CLI draws a progress bar from it)."""

    def planned(self, cells: Mapping[str, int], skipped: int, steps_each: int) -> None:
        """``cells``: sessions to run in each cell."""

    def step_done(self, *, error: bool) -> None: ...
    def session_done(self, cell: str, status: str) -> None: ...


class _Quiet:
    def planned(self, cells: Mapping[str, int], skipped: int, steps_each: int) -> None:
        pass

    def step_done(self, *, error: bool) -> None:
        pass

    def session_done(self, cell: str, status: str) -> None:
        pass


#: Session statuses that mean the session did not run its steps: the run reports them as failures.
FAILED = frozenset({"refused", "crashed"})


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What one ``run`` did."""

    ran: int
    skipped: int
    abandoned: int
    statuses: dict[str, int]

    @property
    def failed(self) -> int:
        """Sessions refused or crashed in this run."""
        return sum(n for status, n in self.statuses.items() if status in FAILED)


def prepare_dir(spec: Spec, out: Path) -> None:
    """Create the run directory, or check that it holds this same spec."""
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = out / "spec.sha256"
    if digest.exists():
        held = digest.read_text(encoding="utf-8").strip()
        if held != spec.sha256:
            raise ConfigError(
                f"{out} holds a run of another spec ({held}); this spec is {spec.sha256}: use another --out"
            )
    else:
        (out / "spec.toml").write_bytes(spec.source)
        digest.write_text(spec.sha256 + "\n", encoding="utf-8")
    for sub in (SESSIONS, LEDGERS):
        (out / sub).mkdir(exist_ok=True, mode=0o700)


async def prepare_run(spec: Spec, out: Path, settings: Settings, env: Mapping[str, str]) -> None:
    """Before the first session: the preflight (what every session needs fails once, first, with
    nothing written), then the run directory, ``run.json`` and ``run.key``."""
    from tickloop.experiment.preflight import preflight  # noqa: PLC0415
    from tickloop.experiment.provenance import write_run_record  # noqa: PLC0415
    from tickloop.experiment.redaction import new_key  # noqa: PLC0415

    await preflight(spec, settings, env)
    prepare_dir(spec, out)
    write_run_record(spec, settings, out)
    new_key(out)


class _LimitedModel:
    """A session's view of its endpoint's ONE model: requests bounded by the endpoint's semaphore.

    Every session of an endpoint shares one model, and so one connection pool: the runner opens it
    for the run and closes it at the end, so a session's ``keep_connections``/``aclose`` do nothing
    (one session ending must not close the connections the others are using)."""

    def __init__(self, model: ChatModel, gate: asyncio.Semaphore) -> None:
        self._model, self._gate = model, gate
        self.name, self.label = model.name, model.label
        self.seen = TurnSeen()  #: what the model did for the current turn (the meter resets it)
        self.returned: set[str] = set()  #: the model ids the provider returned

    async def stream(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamEvent]:
        async with self._gate:
            seen = self.seen
            seen.sent = seen.sent or time.monotonic()
            async for event in self._model.stream(messages, tools=tools):
                if isinstance(event, TextDelta) and seen.first_text is None:
                    seen.first_text = time.monotonic()
                elif isinstance(event, Finished):  # what the provider said of the answer, for the dataset
                    seen.finish_reason = event.finish_reason
                    if event.model:
                        self.returned.add(event.model)
                yield event

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        async with self._gate:
            return await self._model.complete(messages, json_schema=json_schema, max_tokens=max_tokens)

    def keep_connections(self) -> None:
        pass  # the runner keeps the shared model's connections for the whole run

    async def aclose(self) -> None:
        pass  # the runner closes the shared model when the run ends


@dataclass(slots=True)
class TurnSeen:
    """A turn as its model saw it. The agent sends a turn's request ahead of the fsyncs that precede
    the turn (``harness.ahead``), so its answer may arrive before the turn is written: the times are
    taken where the request is made, not from the agent's events."""

    sent: float | None = None  #: monotonic time of the turn's first request
    first_text: float | None = None  #: ... of its first streamed text
    finish_reason: str | None = None  #: of the last answer streamed


@dataclass(slots=True)
class StepMeter:
    """Listens to one session's agent and measures each time step's turn; the last turn of the
    person's opening is step 0, the session's baseline."""

    progress: Progress
    model: _LimitedModel | None = None  #: the session's model, which saw each answer's finish reason
    started: float = field(default_factory=time.monotonic)
    steps: list[dict[str, Any]] = field(default_factory=list)
    _current: dict[str, Any] | None = None
    _t0: float = 0.0
    _text: list[str] = field(default_factory=list)

    def __call__(self, event: AgentEvent) -> None:
        now = time.monotonic()
        if isinstance(event, TurnStarted):
            step = event.turn.input.meta.get("step")
            self._current = None
            if step is None and event.turn.input.source.kind == "user":
                step = 0
                self.steps = [s for s in self.steps if s["step"] != 0]  # only the opening's last turn
            if isinstance(step, int):
                self._current = {"step": step, "turn": event.turn.number}
                self._t0, self._text = now, []
        elif isinstance(event, TextStreamed) and self._current is not None:
            self._text.append(event.text)
        elif isinstance(event, TurnEnded):
            # A turn's requests all go out after the previous turn's terminal: what the model saw
            # since then is this turn's.
            seen = TurnSeen() if self.model is None else self.model.seen
            if self.model is not None:
                self.model.seen = TurnSeen()
            if self._current is not None:
                self._end(self._current, event, now, seen)

    def _end(self, current: dict[str, Any], event: TurnEnded, now: float, seen: TurnSeen) -> None:
        terminal, text = event.terminal, "".join(self._text)
        usage = terminal.usage
        start = min(self._t0, seen.sent or self._t0)  # the turn starts with its request
        current.update(
            startMs=_ms(start - self.started),
            status=str(terminal.status),
            latencyMs=_ms(now - start),
            ttftMs=None if seen.first_text is None or not text else _ms(seen.first_text - start),
            inputTokens=None if usage is None else usage.input_tokens,
            outputTokens=None if usage is None else usage.output_tokens,
            usageReported=usage is not None,
            finishReason=seen.finish_reason,
            toolCalls=terminal.tool_calls or 0,
            chars=len(text),
            words=len(text.split()),
        )
        if terminal.detail:
            current["detail"] = terminal.detail
        self.steps.append(current)
        if current["step"] > 0:
            self.progress.step_done(error=str(terminal.status) != "completed")
        self._current = None


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class Runner:
    """Schedules the sessions of one spec into one run directory."""

    def __init__(
        self,
        spec: Spec,
        out: Path,
        *,
        settings: Settings,
        env: Mapping[str, str],
        concurrency: int = 8,
        per_endpoint: int | None = None,
        shard: Shard = ALL,
        progress: Progress | None = None,
    ) -> None:
        if not 1 <= concurrency <= 4096:
            raise ConfigError(f"--concurrency {concurrency}: expected 1..4096")
        self.spec, self.out, self.settings, self.env = spec, out, settings, env
        self.concurrency, self.shard = concurrency, shard
        self.per_endpoint = per_endpoint or concurrency
        self.progress: Progress = progress or _Quiet()
        self.manifest = Manifest(out / MANIFEST)
        self._gates: dict[str, asyncio.Semaphore] = {}
        #: one per endpoint and temperature, shared by its sessions
        self._models: dict[tuple[str, float | None], ChatModel] = {}
        self.statuses: dict[str, int] = {}
        #: the sessions' fsyncs (transcripts, ledgers, the manifest) run here, off the event loop
        self._pool: FsyncPool | None = None
        self._writer: ManifestWriter | None = None

    async def run(self) -> RunSummary:
        await prepare_run(self.spec, self.out, self.settings, self.env)
        state = manifest_state(self.manifest)
        # A first pass only counts (for the progress bar and the summary); the second streams the
        # sessions to the workers, so the grid is never held in memory.
        cells: dict[str, int] = {}
        skipped = abandoned = 0
        for plan in self._owned():
            entry = state.get(plan.key)
            if entry is not None and entry.finished:
                skipped += 1
                continue
            abandoned += entry is not None and entry.open_session is not None
            cells[plan.cell.name] = cells.get(plan.cell.name, 0) + 1
        self.progress.planned(cells, skipped, self.spec.steps)
        todo = sum(cells.values())
        queue = self._pending(state)
        self._pool = FsyncPool(workers=min(64, 2 * self.concurrency))
        self._writer = ManifestWriter(self.manifest, self._pool)
        try:
            await asyncio.gather(*(self._worker(queue) for _ in range(min(self.concurrency, todo))))
        finally:
            for model in self._models.values():
                await model.aclose()
            self._writer.close()
            self._pool.shutdown()
        return RunSummary(todo, skipped, abandoned, dict(self.statuses))

    def _owned(self) -> Iterator[SessionPlan]:
        return (plan for plan in self.spec.iter_sessions() if self.shard.owns(plan))

    def _pending(self, state: dict[str, KeyState]) -> Iterator[tuple[SessionPlan, int]]:
        """Each unfinished session with its attempt number; an attempt a crash left open is
        recorded ``abandoned`` just before its key runs again as a new session."""
        for plan in self._owned():
            entry = state.get(plan.key, KeyState())
            if entry.finished:
                continue
            if entry.open_session is not None:
                self.manifest.append({"event": "abandoned", "key": plan.key, "sessionId": entry.open_session})
            yield plan, entry.attempts + 1

    async def _worker(self, queue: Iterator[tuple[SessionPlan, int]]) -> None:
        """Run sessions one after another. A session's ``finished`` record is written as it ends and
        made durable by the fsync of the next one's ``started`` (one fsync, not two, between two
        sessions); the session is counted and reported once it is durable."""
        ended: tuple[str, str] | None = None  #: the cell and status of this worker's last session
        for plan, attempt in queue:  # one shared iterator: each plan goes to exactly one worker
            await self._append(self._started_record(plan, attempt))  # before the session writes anything
            self._count(ended)
            ended = plan.cell.name, await self._session(plan, attempt)
        assert self._writer is not None
        await self._writer.settle()
        self._count(ended)

    def _count(self, ended: tuple[str, str] | None) -> None:
        if ended is not None:
            cell, status = ended
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.progress.session_done(cell, status)

    def _started_record(self, plan: SessionPlan, attempt: int) -> dict[str, Any]:
        cell = plan.cell
        return {
            "key": plan.key, "sessionId": plan.session_id(self.spec.name, attempt), "event": "started",
            "attempt": attempt, "cell": cell.name, "model": cell.model, "policy": cell.policy,
            "opening": cell.opening, "tools": cell.tools,
            "temperature": self._sent_temperature(cell.model, cell.temperature), "replicate": plan.replicate,
            "pid": os.getpid(),
        }  # fmt: skip

    def _model(self, name: str, temperature: float | None) -> _LimitedModel:
        """The session's view of its endpoint: one shared model (one connection pool) per endpoint
        and temperature, every view of the endpoint bounded by the endpoint's one semaphore."""
        from tickloop.models.registry import get_model  # noqa: PLC0415

        gate = self._gates.setdefault(name, asyncio.Semaphore(self.per_endpoint))
        model = self._models.get((name, temperature))
        if model is None:
            model = get_model(name, self.settings, self.env)
            if isinstance(model, OfflineModel):
                # Stateful per session (its call history, failures scripted by call number) and
                # holding no connection: each session gets its own, freed when the session ends.
                return _LimitedModel(model, gate)
            if temperature is not None:
                _sample_at(model, temperature)
            model.keep_connections()
            self._models[(name, temperature)] = model
        return _LimitedModel(model, gate)

    def _sent_temperature(self, name: str, level: float | None) -> float | None:
        """What a request of this endpoint carries: the spec's level, else the endpoint's own."""
        if level is not None or name == "offline":
            return level
        endpoint = self.settings.model.endpoints.get(name)
        return None if endpoint is None else endpoint.temperature

    async def _session(self, plan: SessionPlan, attempt: int) -> str:
        from tickloop.harness import TickOptions, open_chat_agent  # noqa: PLC0415
        from tickloop.harness.tools import open_toolbox, tools_settings  # noqa: PLC0415

        spec, cell, session_id = self.spec, plan.cell, plan.session_id(self.spec.name, attempt)
        base = {"key": plan.key, "sessionId": session_id}
        options = TickOptions(
            default_ticks=spec.steps,
            delay_ms=spec.delay_ms,
            audit_dir=self.out / LEDGERS,
            default_policy=plan.cell.policy,
            policies=spec.policies,
            max_tokens_per_run=spec.max_tokens_per_session,
        )
        meter = StepMeter(self.progress)
        error: str | None = None
        try:
            model = meter.model = self._model(cell.model, cell.temperature)
            # The spec's toolsets, with the config's [tools] settings (the workspace root, caps).
            enable = spec.tools(cell.tools)
            tools = tools_settings(self.settings.tools, enable=enable) if enable else None
            agent = open_chat_agent(
                model,
                sessions_dir=self.out / SESSIONS,
                session_id=session_id,
                tick=options,
                listeners=[meter],
                toolbox=None if tools is None else open_toolbox(tools),
                max_rounds=8 if tools is None else tools.max_rounds,
                fsync_pool=self._pool,
            )
            await agent.start()
            try:
                for line in spec.opening(cell.opening):
                    agent.submit(line)
                    await agent.wait_idle()
                agent.submit(f"/tick {spec.steps} --policy {plan.cell.policy}")
                await agent.wait_idle()
            finally:
                await agent.close()
        except Exception as exc:  # noqa: BLE001  (one broken session must not end the run; it is recorded)
            error = f"{type(exc).__name__}: {exc}"
        status, rule = (
            ("crashed", None) if error else _ending(self.out / LEDGERS / session_file_name(session_id))
        )
        assert self._writer is not None  # durable with the next session's started record (``_worker``)
        self._writer.write(
            {**base, "event": "finished", "status": status, "endRule": rule, "error": error,
             "wallMs": _ms(time.monotonic() - meter.started), "steps": meter.steps,
             "stepsPlanned": spec.steps,
             "modelReturned": [] if meter.model is None else sorted(meter.model.returned)}
        )  # fmt: skip
        return status

    async def _append(self, record: Mapping[str, Any]) -> None:
        """A durable manifest record, fsynced on a worker thread (the event loop runs on)."""
        assert self._writer is not None
        await self._writer.append(record)


def _sample_at(model: ChatModel, temperature: float) -> None:
    """Send ``temperature`` with every request of this (endpoint's own, unshared) model."""
    from tickloop.models.openai_compat import OpenAICompatModel  # noqa: PLC0415

    if not isinstance(model, OpenAICompatModel):
        raise ConfigError(f"model {model.name!r} takes no temperature (the spec's temperature factor)")
    model.temperature = temperature


def _ending(ledger: Path) -> tuple[str, str | None]:
    """How the session's tick run ended, from its ledger: complete, stopped, or refused."""
    status, rule = "no_run", None
    for rec in read_ledger(ledger).records():
        kind = rec.get("type")
        if kind == "loop_complete":
            status, rule = "complete", rec.get("rule")
        elif kind == "loop_stopped":
            status, rule = "stopped", rec.get("rule")
        elif kind == "command_rejected":
            status, rule = "refused", rec.get("rule")
    return status, None if rule is None else str(rule)
