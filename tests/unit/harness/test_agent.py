"""The Agent on in-memory fakes: terminals, queueing, the command plane and the plugin API."""

from __future__ import annotations

import asyncio

import pytest

from tickloop.errors import ConfigError
from tickloop.harness import Agent, CommandResult, Notice, PluginHost, TextStreamed, Turn, memory_session
from tickloop.harness.agent import HarnessError
from tickloop.models import OfflineModel
from tickloop.protocol.envelope import Message, Source
from tickloop.protocol.predicates import TerminalStatus


async def started(model: OfflineModel, plugins: tuple[object, ...] = ()) -> tuple[Agent, list[object]]:
    events: list[object] = []
    agent = Agent(model, memory_session(), plugins=plugins, listeners=[events.append])  # type: ignore[arg-type]
    await agent.start()
    return agent, events


async def idle(agent: Agent) -> None:
    async with asyncio.timeout(5):
        await agent.wait_idle()


def statuses(agent: Agent) -> list[str]:
    return [str(t.terminal.status) for t in agent.session.turns if t.terminal is not None]


async def test_a_provider_error_ends_the_turn_with_an_error_terminal() -> None:
    """A model failure closes the turn as `error` with the provider's message; the chat goes on."""
    agent, _ = await started(OfflineModel(fail_on_call=frozenset({1})))
    agent.submit("hello")
    await idle(agent)
    agent.submit("again")
    await idle(agent)
    assert statuses(agent) == ["error", "completed"]
    assert "scripted error" in (agent.session.turns[0].terminal.detail or "")  # type: ignore[union-attr]
    await agent.close()


async def test_interrupt_ends_the_turn_with_an_interrupted_terminal_and_keeps_the_partial_reply() -> None:
    """/interrupt stops a streaming turn: `interrupted`, with what had streamed so far kept."""
    agent, events = await started(OfflineModel(reply="one two three four five six", token_delay=0.02))
    agent.submit("hello")
    async with asyncio.timeout(5):
        while not any(isinstance(e, TextStreamed) for e in events):
            await asyncio.sleep(0.001)
    agent.submit("/interrupt")
    await idle(agent)
    turn = agent.session.turns[0]
    assert statuses(agent) == ["interrupted"]
    assert turn.reply is not None
    assert turn.reply.text.startswith("one")
    assert turn.reply.text != "one two three four five six"
    assert agent.submit("/interrupt") == CommandResult("no turn is active", ok=False)
    await agent.close()


async def test_messages_typed_during_a_turn_queue_and_start_one_at_a_time() -> None:
    """Lines submitted while a turn runs wait for its terminal; each becomes its own turn, in order."""
    model = OfflineModel(echo=True, token_delay=0.001)
    agent, _ = await started(model)
    for line in ("a", "b", "c"):
        agent.submit(line)
    assert agent.queued == 3
    await idle(agent)
    assert [call[-1].content for call in model.calls] == ["a", "b", "c"]
    assert [len(call) for call in model.calls] == [1, 3, 5]
    await agent.close()


@pytest.mark.parametrize(
    "line",
    [
        "/",
        "/ ",
        "/nope",
        "/TICK",
        "/tick\x00",
        "/\x00",
        "/日本語 で",
        "/" + "x" * 500,
        "  /help-me",
        "/\u202e",
    ],
)
async def test_garbage_command_lines_never_reach_the_model(line: str) -> None:
    """Any line starting with / (after blanks) is a command: unknown ones get a clear message."""
    model = OfflineModel()
    agent, events = await started(model)
    result = agent.submit(line)
    await idle(agent)
    assert result is not None
    assert not result.ok
    assert "unknown command" in result.text
    assert "not sent to the model" in result.text
    assert len(result.text) < 300
    assert model.calls == []
    assert isinstance(events[-1], Notice)
    await agent.close()


async def test_blank_lines_are_ignored() -> None:
    """An empty or blank line starts no turn."""
    model = OfflineModel()
    agent, _ = await started(model)
    for line in ("", "   ", "\n"):
        agent.submit(line)
    await idle(agent)
    assert model.calls == []
    await agent.close()


class Recorder:
    """A minimal plugin: a command, terminal observation, a follow-up with its own source."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []
        self.disposed = False
        self.host: PluginHost | None = None

    @property
    def busy(self) -> bool:
        return False

    def start(self, host: PluginHost) -> None:
        self.host = host
        host.register_command("again", self.again, "ask once more")

    def again(self, line: str) -> CommandResult:
        assert self.host is not None
        self.host.enqueue(
            Message(role="user", content=(line.removeprefix("/again").strip(),), source=self.host.source)
        )
        return CommandResult("queued")

    def on_terminal(self, turn: Turn) -> None:
        assert turn.terminal is not None
        self.seen.append((turn.number, str(turn.terminal.status)))

    def dispose(self) -> None:
        self.disposed = True


async def test_plugins_register_commands_observe_terminals_enqueue_tagged_follow_ups_and_are_disposed() -> (
    None
):
    """Plugin API: a command runs, its follow-up carries the plugin's source, dispose is called."""
    plugin = Recorder()
    model = OfflineModel()
    agent, _ = await started(model, (plugin,))
    agent.submit("hello")
    await idle(agent)
    agent.submit("/again more please")
    await idle(agent)
    assert plugin.seen == [(1, "completed"), (2, "completed")]
    assert agent.session.turns[1].input.source == Source("plugin", "recorder")
    assert model.calls[1][-1].content == "more please"
    assert plugin.host is not None
    with pytest.raises(ConfigError, match="tagged with its source"):
        plugin.host.enqueue(Message(role="user", content=("x",), source=Source("user")))
    with pytest.raises(ConfigError, match="already registered"):
        plugin.host.register_command("again", plugin.again, "twice")
    await agent.close()
    assert plugin.disposed


async def test_the_terminal_is_durable_before_plugins_observe_it() -> None:
    """When a plugin sees a terminal, the session log already holds that terminal record."""
    seen: list[bool] = []

    class Check(Recorder):
        def on_terminal(self, turn: Turn) -> None:
            assert self.host is not None
            records = self.host._agent.session.log.records  # type: ignore[attr-defined]
            seen.append(records[-1]["type"] == "terminal" and records[-1]["turn"] == turn.number)

    agent, _ = await started(OfflineModel(), (Check(),))
    agent.submit("hello")
    await idle(agent)
    await agent.close()
    assert seen == [True]
    assert agent.session.turns[0].terminal is not None
    assert agent.session.turns[0].terminal.status is TerminalStatus.COMPLETED


async def test_a_message_that_is_not_unicode_is_refused_before_it_reaches_the_session() -> None:
    """A lone surrogate cannot be stored or sent: the line is refused with a clear message."""
    model = OfflineModel()
    agent, _ = await started(model)
    result = agent.submit("bad \ud800 text")
    assert result is not None
    assert "not well-formed Unicode" in result.text
    await idle(agent)
    assert model.calls == []
    assert agent.session.turns == []
    await agent.close()


async def test_a_dead_worker_fails_waiters_instead_of_hanging() -> None:
    """If the session cannot be written, wait_idle raises instead of waiting forever."""

    class BrokenLog:
        def append(self, record: object) -> None:  # noqa: ARG002
            raise OSError("disk full")

        def close(self) -> None:
            """Nothing to release."""

    session = memory_session()
    session.log = BrokenLog()
    agent = Agent(OfflineModel(), session)
    await agent.start()
    agent.submit("hello")
    with pytest.raises(HarnessError, match="disk full"):
        await idle(agent)
    await agent.close()


async def test_one_tick_plugin_serves_one_agent() -> None:
    """A tick plugin cannot be shared: one run and one timer per agent."""
    from tickloop.harness import NullLedger, TickOptions, TickPlugin  # noqa: PLC0415

    plugin = TickPlugin(TickOptions.from_mapping({}), NullLedger())
    first, _ = await started(OfflineModel(), (plugin,))
    with pytest.raises(ConfigError, match="exactly one agent"):
        await started(OfflineModel(), (plugin,))
    await first.close()
