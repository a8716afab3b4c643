"""One notice when the model may never see the tools it is offered.

A model whose chat template has no tools section (SmolLM2's) is sent the tools, the server drops
them while rendering the prompt, and the model answers as if there were none: nothing fails, and
nothing would tell the person. Two signs, each checked once per session:

- the server reports its template (llama.cpp's ``GET /props``) and the template never mentions
  ``tools``: the notice comes as the session starts;
- otherwise, the model's first ``QUIET_TURNS`` answered turns with tools offered made no call.

Either way the person is told once; nothing else changes (the tools stay offered). The built-in
offline model is never watched: it has no template, and its tool behaviour is scripted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: answered turns with tools offered and no call before the notice
QUIET_TURNS = 3


def watch_for(model: object, tool_count: int, say: Callable[[str], None]) -> ToolsUnseenWatch:
    """The watch for ``model`` offered ``tool_count`` tools (none for the offline model)."""
    from tickloop.models.offline import OfflineModel  # noqa: PLC0415  (already imported by a chat)

    return ToolsUnseenWatch(0 if isinstance(model, OfflineModel) else tool_count, say)


class ToolsUnseenWatch:
    """Counts answered turns with tools offered and no call; says so once."""

    def __init__(self, tool_count: int, say: Callable[[str], None]) -> None:
        self.tool_count = tool_count
        self._say = say
        self._quiet = 0
        self.told = tool_count == 0

    async def check_template(self, model: object) -> None:
        """At session start: a server that reports a template without ``tools`` gets the notice."""
        props = getattr(model, "props", None)
        if self.told or props is None:
            return
        found: Mapping[str, Any] | None = await props()
        template = found.get("chat_template") if found is not None else None
        if isinstance(template, str) and template and "tools" not in template:
            self._tell(
                "the server's chat template has no tools section, so the model never sees the "
                f"{self._tools()} offered"
            )

    def turn_ended(self, *, answered: bool, calls: int) -> None:
        """After each turn: count a quiet one, reset on any call."""
        if self.told or not answered:
            return
        self._quiet = 0 if calls else self._quiet + 1
        if calls:
            self.told = True  # the model does see them
        elif self._quiet >= QUIET_TURNS:
            self._tell(
                f"the model made no tool call in its first {QUIET_TURNS} turns with {self._tools()} "
                "offered; its chat template may have no tools section (SmolLM2's has none), so it "
                "may never see them"
            )

    def _tools(self) -> str:
        return f"{self.tool_count} tool{'s' if self.tool_count != 1 else ''}"

    def _tell(self, why: str) -> None:
        self.told = True
        self._say(f"notice: {why}. Use a model whose chat template supports tools to let it call them.")
