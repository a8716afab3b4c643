"""The asyncio Agent: exactly one active turn; inputs queue and start only at turn boundaries.

Lifecycle: ``agent = Agent(model, session, plugins=[...])``; ``await agent.start()``; feed a person's
lines with ``agent.submit(line)``; ``await agent.wait_idle()``; ``await agent.close()``.

A turn ends with exactly one terminal: ``completed`` when the stream finishes, ``error`` when the
provider raises ``ModelError`` (or anything else), ``interrupted`` on ``interrupt()`` (Ctrl-C,
``/interrupt``). The terminal is durable before plugins observe it. Nothing steers an active turn:
follow-ups and a person's next message wait in the queue.

With a ``Toolbox`` a turn is a loop: model -> tool calls -> tool results -> model, until the model
answers without a call. The calls of a round are recorded before any runs, then run one at a time;
each result is recorded as it arrives. A model that still asks for tools after ``max_rounds`` rounds
ends the turn ``error``, saying so. An interrupt during a call cancels it: that call is recorded with
outcome ``unknown`` (never re-run), the calls after it as ``skipped``. Tool output reaches the model
only as a marked ``tool`` message: it never passes through the command plane.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import NoReturn

from tickloop.clock import Clock
from tickloop.errors import ModelError, TickloopError
from tickloop.harness.ahead import AnswerAhead, AnswerNow
from tickloop.harness.commands import CommandPlane, CommandResult, is_command
from tickloop.harness.durable import Durability
from tickloop.harness.events import (
    AgentEvent,
    Listener,
    Notice,
    TextStreamed,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from tickloop.harness.plugin import Plugin, PluginHost
from tickloop.harness.session import Session, ToolRound, Turn
from tickloop.harness.tools.base import (
    CallResult,
    CallStatus,
    Toolbox,
    digest,
    model_text,
    skipped_result,
    unknown_result,
)
from tickloop.harness.tools_notice import ToolsUnseenWatch, watch_for
from tickloop.models.base import (
    ChatMessage,
    ChatModel,
    Finished,
    TextDelta,
    ToolCall,
    ToolCalls,
    Usage,
)
from tickloop.protocol.envelope import USER_SOURCE, Message
from tickloop.protocol.predicates import TerminalStatus


class HarnessError(TickloopError):
    """The agent cannot go on."""


class ToolRoundsExceededError(TickloopError):
    """The model kept asking for tools past the turn's cap on tool rounds ([tools] maxRounds)."""


#: tool rounds a turn may take unless the caller says otherwise (``[tools] maxRounds``)
DEFAULT_MAX_ROUNDS = 8


class Agent:
    """One conversation with one model, hosting plugins and a command plane."""

    def __init__(
        self,
        model: ChatModel,
        session: Session,
        *,
        plugins: Sequence[Plugin] = (),
        clock: Clock | None = None,
        listeners: Iterable[Listener] = (),
        toolbox: Toolbox | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        durability: Durability | None = None,
    ) -> None:
        self.model = model
        self.durability = durability
        self.toolbox = toolbox or Toolbox()
        self.max_rounds = max_rounds
        self._running_call: ToolCall | None = None
        self._running_since = 0.0
        self.session = session
        self.clock = clock or session.clock
        self.commands = CommandPlane()
        self.plugins = tuple(plugins)
        self._listeners = list(listeners)
        self._queue: deque[Message] = deque()
        self._attached: list[str] = []  #: blocks the person inserted for their next message
        self._wakeup = asyncio.Event()
        self._changed = asyncio.Event()
        self._stream: asyncio.Task[Usage | None] | None = None
        #: the next turn's first request, sent before the turn starts
        self._ahead: AnswerAhead | AnswerNow | None = None
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self._failure: BaseException | None = None
        self._tools_watch = ToolsUnseenWatch(0, lambda _: None)  #: set up by start()
        self.exit_requested = False  #: /exit or /quit was typed: the chat closes after this line
        self.commands.register("help", self._help, "list the commands")
        self.commands.register("interrupt", self._interrupt_command, "interrupt the active turn")
        self.commands.register("exit", self._exit_command, "close the chat (also /quit, or Ctrl-D)")
        self.commands.register("quit", self._exit_command, "close the chat (also /exit, or Ctrl-D)")

    # -- state ---------------------------------------------------------------------------------

    @property
    def turn_active(self) -> bool:
        return self._stream is not None

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def idle(self) -> bool:
        """No active turn, nothing queued, no plugin with pending work (e.g. a scheduled tick)."""
        return not self.turn_active and not self._queue and not any(p.busy for p in self.plugins)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def emit(self, event: AgentEvent) -> None:
        for listener in self._listeners:
            listener(event)

    def notify_changed(self) -> None:
        """Wake everyone waiting in ``wait_idle`` to re-check."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_idle(self) -> None:
        """Return once the agent is idle (a scripted driver reads its next line only then)."""
        await self.wait_for(lambda: self.idle)

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` holds; it is re-checked after every change of agent state.

        Raises ``HarnessError`` if the turn worker died (e.g. the session file could not be written),
        so a driver fails loudly instead of waiting forever.
        """
        while True:
            if self._failure is not None:
                raise HarnessError(f"the agent stopped: {self._failure!r}") from self._failure
            if condition():
                return
            await self._changed.wait()

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Keep the model's connection for the session, start the plugins, then the turn worker."""
        self.model.keep_connections()
        await self.toolbox.start(lambda text: self.emit(Notice(text, error=True)))
        self._tools_watch = watch_for(
            self.model, len(self.toolbox.specs()), lambda text: self.emit(Notice(text))
        )
        with contextlib.suppress(Exception):  # a server that cannot say its template says nothing
            await self._tools_watch.check_template(self.model)
        for plugin in self.plugins:
            plugin.start(PluginHost(self, plugin))
        self._worker = asyncio.create_task(self._run(), name="tickloop-agent")
        self._worker.add_done_callback(self._worker_done)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._failure = task.exception()
            self.emit(Notice(f"the agent stopped: {self._failure!r}", error=True))
            self.notify_changed()

    async def close(self) -> None:
        """Interrupt an active turn, dispose the plugins, stop the worker, close the model's kept
        connections and the session."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        self.interrupt()
        for plugin in self.plugins:
            plugin.dispose()
        while self.turn_active and self._failure is None:
            await self._changed.wait()
        await self._stop_worker()
        try:
            await self.toolbox.aclose()
            await self.model.aclose()
        finally:
            if self.durability is not None:
                await self.durability.aclose()
            self.session.close()

    async def _stop_worker(self) -> None:
        if self._worker is not None and not self._worker.done():  # a dead worker was reported already
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    # -- input ---------------------------------------------------------------------------------

    def submit(self, line: str) -> CommandResult | None:
        """A person's line: a command runs now (even mid-turn); anything else queues as a message."""
        if is_command(line):
            result = self.commands.dispatch(line)
            self.emit(Notice(result.text, error=not result.ok))
            self.notify_changed()
            return result
        text = line.rstrip("\r\n")
        if not text.strip():
            return None
        if not _is_unicode(text):
            refused = CommandResult("not sent: the message is not well-formed Unicode", ok=False)
            self.emit(Notice(refused.text, error=True))
            return refused
        message = Message(role="user", content=(*self._attached, text), source=USER_SOURCE)
        self._attached.clear()
        self._show_plugins(message)
        self.enqueue(message)
        return None

    def _show_plugins(self, message: Message) -> None:
        for plugin in self.plugins:
            # Optional hook: a plugin reacts to a person's message before it queues (e.g. the tick
            # plugin cancels a pending time step at once rather than when its timer comes due).
            hook = getattr(plugin, "on_person_message", None)
            if hook is not None:
                try:
                    hook(message)
                except Exception as exc:  # noqa: BLE001  (one broken plugin must not drop the message)
                    self.emit(Notice(f"plugin {plugin.name} failed on a message: {exc!r}", error=True))

    def attach(self, text: str) -> None:
        """Insert ``text`` before the person's next message (``/mcp read``, ``/mcp prompt``): it is
        a part of that message, so it reaches the model with it and never by itself."""
        self._attached.append(text)
        self.notify_changed()

    def clear_attached(self) -> int:
        """Drop what ``attach`` inserted and no message has taken yet; how many blocks were dropped."""
        dropped = len(self._attached)
        self._attached.clear()
        return dropped

    def enqueue(self, message: Message) -> None:
        """Queue an input; it starts at the next turn boundary."""
        if self._closed:
            return
        self._queue.append(message)
        self._wakeup.set()
        self.notify_changed()

    def interrupt(self) -> bool:
        """End the active turn with an ``interrupted`` terminal. False if no turn is active."""
        if self._stream is None:
            return False
        self._stream.cancel()
        return True

    def _interrupt_command(self, line: str) -> CommandResult:  # noqa: ARG002  (takes no arguments)
        if self.interrupt():
            return CommandResult("interrupting the active turn")
        return CommandResult("no turn is active", ok=False)

    def _exit_command(self, line: str) -> CommandResult:  # noqa: ARG002  (takes no arguments)
        self.exit_requested = True
        return CommandResult("closing the chat")

    def _help(self, line: str) -> CommandResult:  # noqa: ARG002  (takes no arguments)
        return CommandResult(self.commands.help_text())

    # -- turns ---------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            while not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            # The input's request goes out now (``harness.ahead``), while what queued the input (a time
            # step's tick_enqueued) is made durable; only then is the turn written. The input stays
            # queued meanwhile, so the agent is not idle.
            if self.durability is not None and self.durability.dirty:
                self._ahead = self._ask(then=self._queue[0])
            try:
                await self._settle()
            except BaseException:
                await self._give_up_ahead()
                raise
            await self._turn(self._queue.popleft())

    async def _turn(self, message: Message) -> None:
        turn = self.session.start_turn(message)
        self.emit(TurnStarted(turn))
        chunks: list[str] = []
        self._stream = asyncio.create_task(self._consume(turn.number, chunks))
        await asyncio.wait((self._stream,))
        await self._give_up_ahead()  # an interrupt before the turn's first round read its answer
        status, usage, detail = _outcome(self._stream)
        if self._stream.cancelled():
            self._settle_cut_off()
        if chunks:
            self.session.add_reply("".join(chunks))
        terminal = self.session.end_turn(status, usage=usage, detail=detail)
        await self._settle()  # the terminal is durable before any plugin schedules on it
        self._stream = None
        self.emit(TurnEnded(terminal))
        self._after_turn(answered=status is TerminalStatus.COMPLETED)

    def _after_turn(self, *, answered: bool) -> None:
        ended = self.session.turns[-1]
        self._tools_watch.turn_ended(answered=answered, calls=ended.call_counts()[0])
        self._observe(ended)
        self.notify_changed()

    async def _consume(self, number: int, chunks: list[str]) -> Usage | None:
        """The turn's rounds: stream an answer; run its tool calls, if any, and ask again."""
        specs = self.toolbox.specs()
        if specs:
            self.session.offer_tools()
        rounds = 0
        while True:
            usage, calls = await self._stream_once(number, chunks)
            if not calls:
                return usage
            rounds += 1
            text = "".join(chunks)
            chunks.clear()
            self.session.begin_tool_round(text, calls)
            await self._settle()  # the calls are durable before any of them runs
            if rounds > self.max_rounds:
                self._refuse_round(calls)
            for call in calls:
                await self._run_call(number, call)

    def _refuse_round(self, calls: tuple[ToolCall, ...]) -> NoReturn:
        """One round past ``max_rounds``: its calls are recorded as skipped and the turn fails."""
        for call in calls:
            self.session.add_tool_result(skipped_result(call, self.max_rounds))
        raise ToolRoundsExceededError(
            f"the model asked for tools again after {self.max_rounds} tool rounds, the cap per "
            "turn ([tools] maxRounds); its last calls were not run"
        )

    async def _run_call(self, number: int, call: ToolCall) -> None:
        self._running_call = call
        self._running_since = time.monotonic()
        self.emit(ToolCallStarted(number, call))

        def progress(done: float, total: float | None, message: str) -> None:
            self.emit(ToolCallProgress(number, call, done, total, message))

        result = await self.toolbox.run(call, progress=progress)
        self._running_call = None
        self.session.add_tool_result(result)
        self.emit(ToolCallEnded(number, result))

    def _settle_cut_off(self) -> None:
        """After an interrupt: the call that was running has outcome ``unknown``; later calls of
        its round never started (``skipped``)."""
        turn = self.session.open_turn
        running, self._running_call = self._running_call, None
        if turn is None or not turn.rounds:
            return
        for call in turn.rounds[-1].pending():
            if running is not None and call.id == running.id:
                elapsed = int((time.monotonic() - self._running_since) * 1000)
                cut = unknown_result(call, elapsed, "interrupted")
                self.session.add_tool_result(cut, reason="interrupted")
                self.emit(ToolCallEnded(turn.number, cut))
            else:
                self.session.add_tool_result(_not_started(call))

    async def _stream_once(self, number: int, chunks: list[str]) -> tuple[Usage | None, tuple[ToolCall, ...]]:
        answer, self._ahead = self._ahead or self._ask(), None
        usage: Usage | None = None
        calls: tuple[ToolCall, ...] = ()
        try:
            await self._settle()  # what led to the request is durable before any of its answer is read
            async for event in answer.events():
                if isinstance(event, TextDelta):
                    chunks.append(event.text)
                    self.emit(TextStreamed(number, event.text))
                elif isinstance(event, ToolCalls):
                    calls = event.calls
                elif isinstance(event, Finished):
                    usage = event.usage
        finally:
            await answer.close()
        return usage, calls

    def _ask(self, then: Message | None = None) -> AnswerAhead | AnswerNow:
        """The request for the transcript (and ``then``, the input about to start its turn): sent
        now if records that led to it are still on their way to the disk, its answer read once
        they are durable; otherwise read as it streams."""
        specs = self.toolbox.specs()
        messages = self._model_input(with_tools=bool(specs), then=then)
        dirty = self.durability is not None and self.durability.dirty
        return (AnswerAhead if dirty else AnswerNow)(lambda: self.model.stream(messages, tools=specs))

    async def _give_up_ahead(self) -> None:
        answer, self._ahead = self._ahead, None
        if answer is not None:
            await answer.close()

    def _model_input(self, *, with_tools: bool = True, then: Message | None = None) -> list[ChatMessage]:
        """The transcript as the model sees it: roles and text, each turn's tool rounds with their
        results as marked ``tool`` messages; commands were never in it. ``with_tools=False`` (a
        session reopened without its tools): earlier rounds become assistant text, since servers
        refuse ``tool`` messages in a request that offers no tools. ``then``: the input of the turn
        about to start, last."""
        out: list[ChatMessage] = []
        for turn in self.session.turns:
            out.append(ChatMessage(turn.input.role, turn.input.text))
            for rnd in turn.rounds:
                out.extend(_round_messages(rnd) if with_tools else [_round_as_text(rnd)])
            if turn.reply is not None:
                out.append(ChatMessage("assistant", turn.reply.text))
        if then is not None:
            out.append(ChatMessage(then.role, then.text))
        return out

    async def _settle(self) -> None:
        """With a ``Durability``: wait (off the event loop) until every line written is durable.
        Without one there is nothing to wait for: each append fsynced before it returned."""
        if self.durability is not None:
            await self.durability.settle()

    def _observe(self, turn: Turn) -> None:
        for plugin in self.plugins:
            try:
                plugin.on_terminal(turn)
            except Exception as exc:  # noqa: BLE001  (one broken plugin must not end the conversation)
                self.emit(Notice(f"plugin {plugin.name} failed on turn {turn.number}: {exc!r}", error=True))


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _round_messages(rnd: ToolRound) -> list[ChatMessage]:
    out = [ChatMessage("assistant", rnd.text, tool_calls=rnd.calls)]
    for call in rnd.calls:
        result = rnd.result_of(call.id)
        content = model_text(result) if result is not None else "[tool output: none yet]"
        images = result.images if result is not None else ()
        out.append(ChatMessage("tool", content, tool_call_id=call.id, images=images))
    return out


def _round_as_text(rnd: ToolRound) -> ChatMessage:
    lines = [rnd.text] if rnd.text else []
    for call in rnd.calls:
        result = rnd.result_of(call.id)
        lines.append(f"(called {call.name} with {call.arguments})")
        if result is not None:
            lines.append(model_text(result))
    return ChatMessage("assistant", "\n".join(lines))


def _not_started(call: ToolCall) -> CallResult:
    text = "not run: the turn was interrupted before this call started"
    return CallResult(call, CallStatus.SKIPPED, text, 0, digest(text), len(text))


def _outcome(task: asyncio.Task[Usage | None]) -> tuple[TerminalStatus, Usage | None, str | None]:
    if task.cancelled():
        return TerminalStatus.INTERRUPTED, None, None
    exc = task.exception()
    if isinstance(exc, ModelError | ToolRoundsExceededError):
        return TerminalStatus.ERROR, None, exc.message
    if exc is not None:
        return TerminalStatus.ERROR, None, f"{type(exc).__name__}: {exc}"
    return TerminalStatus.COMPLETED, task.result(), None
