"""Model names -> providers. ``offline`` is built in; other names come from settings."""

from __future__ import annotations

from collections.abc import Mapping

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.models.base import ChatModel
from tickloop.models.offline import OfflineModel


def get_model(
    name: str,
    settings: Settings,
    env: Mapping[str, str] | None = None,  # noqa: ARG001  (API keys of remote providers; see models helper)
) -> ChatModel:
    """The provider for ``name``; raises ``ConfigError`` naming the unknown model."""
    if name == "offline":
        options = settings.model.offline
        return OfflineModel(
            reply=options.reply,
            echo=options.echo,
            token_delay=options.token_delay_ms / 1000,
            fail_on_call=frozenset(options.fail_on_calls),
        )
    raise ConfigError(f"unknown model {name!r}: known models are: offline")
