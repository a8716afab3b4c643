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

__all__ = [
    "ChatMessage",
    "ChatModel",
    "Completion",
    "Finished",
    "OfflineModel",
    "StreamEvent",
    "TextDelta",
    "Usage",
]
