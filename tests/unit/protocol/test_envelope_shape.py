"""The message envelope's observable shape (spec: a person's message carries ``{"kind": "user"}`` and
nothing else as its source). A mutation run found a ``"plugin": null`` on a person's message free to
appear: a reader counting time steps by ``source.plugin`` presence would then miscount."""

from __future__ import annotations

from tickloop.protocol.envelope import PLUGIN_SOURCE, USER_SOURCE, Message, Source


def test_a_persons_message_has_a_source_with_no_plugin_member() -> None:
    message = Message(role="user", content=("hello", " there"), source=USER_SOURCE)
    assert message.to_dict() == {
        "role": "user",
        "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": " there"}],
        "source": {"kind": "user"},
    }
    assert Source("assistant").to_dict() == {"kind": "assistant"}


def test_a_plugin_source_names_its_plugin() -> None:
    assert PLUGIN_SOURCE.to_dict() == {"kind": "plugin", "plugin": PLUGIN_SOURCE.plugin}
    assert PLUGIN_SOURCE.plugin
