"""What an MCP tool's result becomes: text for the model and the transcript, and its images.

A text block is its text. An image block is recorded by its type, size and sha256 (its
``placeholder``); its bytes go, in memory only, to a model whose endpoint takes images
(``tickloop.models.wire``). Audio, and an image past ``MAX_IMAGE_BYTES``, are only a placeholder.
``structuredContent`` is what the model reads when the tool declares an ``outputSchema`` (the SDK
has validated it against that schema by then).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from tickloop.harness.tools.base import ToolOutput
from tickloop.models.base import ImagePart
from tickloop.sha256 import sha256

#: the largest image (decoded) sent to a vision model; a larger one is only its placeholder
MAX_IMAGE_BYTES = 5_000_000


def tool_output(result: Any, output_schema: object) -> str | ToolOutput:
    """A ``CallToolResult`` (not an error) as what the model reads."""
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in result.content:
        text, image = block_text(block)
        texts.append(text)
        if image is not None:
            images.append(image)
    text = "\n".join(texts)
    structured = result.structured_content
    # a bare {"result": TEXT} is only how the Python SDK wraps a plain return: the text says it
    if structured is not None and output_schema is not None and structured != {"result": text}:
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True)
    return ToolOutput(text, tuple(images)) if images else text


def block_text(block: Any) -> tuple[str, ImagePart | None]:
    """A content block's text, and the image it carries (None: it carries none to send)."""
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text, None
    kind = str(getattr(block, "type", "content"))
    return binary_text(kind, getattr(block, "data", None), getattr(block, "mime_type", None))


def binary_text(kind: str, data: object, mime_type: object) -> tuple[str, ImagePart | None]:
    """Base64 ``data`` of a ``kind`` block (image, audio, blob) as its placeholder, and the image
    to send when it is one (an image of an ``image/`` type within ``MAX_IMAGE_BYTES``)."""
    if not isinstance(data, str):
        return f"[{kind} content not shown]", None
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return f"[{kind} content not shown: not valid base64]", None
    mime = str(mime_type or "unknown type")[:80]
    image = ImagePart(mime=mime, data=data, size=len(raw), sha256="sha256:" + sha256(raw).hexdigest())
    if kind != "image" or not mime.startswith("image/") or image.size > MAX_IMAGE_BYTES:
        return f"[{kind} content not shown: {mime}, {image.size} bytes, {image.sha256}]", None
    return image.placeholder, image


def joined_text(blocks: Sequence[Any]) -> str:
    """The text of ``blocks`` (images as placeholders), for an error result."""
    return "\n".join(block_text(block)[0] for block in blocks)
