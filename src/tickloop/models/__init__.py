"""Model providers behind one interface: OpenAI-compatible (the openai SDK) and offline.

Heavy SDKs are imported only inside the provider that calls them.
"""

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
