"""The time-step envelope has the spec's exact shape, and time steps are counted by source only."""

from __future__ import annotations

from tickloop.protocol.envelope import (
    PLUGIN_SOURCE,
    USER_SOURCE,
    Message,
    Source,
    count_time_steps,
    is_time_step,
    time_step_message,
)
from tickloop.protocol.policy import compile_policy


def test_time_step_message_has_the_spec_shape() -> None:
    """The generated follow-up is a user-role text message whose source is the tickloop plugin."""
    message = time_step_message(compile_policy("default", "tick"))
    assert message.to_dict() == {
        "role": "user",
        "content": [{"type": "text", "text": "tick"}],
        "source": {"kind": "plugin", "plugin": "tickloop"},
    }


def test_a_person_typing_tick_is_not_a_time_step() -> None:
    """Counting uses the source, never string equality, so a human `tick` is not counted."""
    human = Message("user", ("tick",), USER_SOURCE)
    plugin = time_step_message(compile_policy("default", "tick"))
    other_plugin = Message("user", ("tick",), Source("plugin", "someone-else"))
    assistant = Message("assistant", ("tick",), PLUGIN_SOURCE)
    assert count_time_steps([human, plugin, other_plugin, assistant, plugin]) == 2


def test_wire_dicts_are_counted_like_messages() -> None:
    """A history read back from JSON counts the same as the live objects."""
    plugin = time_step_message(compile_policy("p", "a different text"))
    history = [
        plugin.to_dict(),
        {"role": "user", "content": [], "source": {"kind": "user"}},
        {"role": "user"},
    ]
    assert count_time_steps(history) == 1
    assert is_time_step({"role": "user", "source": "plugin"}) is False
