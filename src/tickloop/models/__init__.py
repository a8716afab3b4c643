"""Model providers behind one interface: OpenAI-compatible (the openai SDK) and offline.

Heavy SDKs are imported only inside the provider that calls them.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from tickloop.models.base import (
        ChatMessage,
        ChatModel,
        Completion,
        Finished,
        StreamEvent,
        TextDelta,
        Usage,
    )
    from tickloop.models.offline import OfflineModel
    from tickloop.models.openai_compat import OpenAICompatModel
    from tickloop.models.registry import ModelInfo, get_model, known_models
    from tickloop.models.structured import complete_structured, decode_structured, schema_for

#: name -> the submodule that defines it. Loaded on first use (PEP 562), so that a one-shot tick
#: importing ``tickloop.models.base`` does not also load the OpenAI provider and asyncio.
_FROM = {
    **dict.fromkeys(
        ["ChatMessage", "ChatModel", "Completion", "Finished", "StreamEvent", "TextDelta", "Usage"], "base"
    ),
    "OfflineModel": "offline",
    "OpenAICompatModel": "openai_compat",
    **dict.fromkeys(["ModelInfo", "get_model", "known_models"], "registry"),
    **dict.fromkeys(["complete_structured", "decode_structured", "schema_for"], "structured"),
}


def __getattr__(name: str) -> object:
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"tickloop.models.{_FROM[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ChatMessage",
    "ChatModel",
    "Completion",
    "Finished",
    "ModelInfo",
    "OfflineModel",
    "OpenAICompatModel",
    "StreamEvent",
    "TextDelta",
    "Usage",
    "complete_structured",
    "decode_structured",
    "get_model",
    "known_models",
    "schema_for",
]
