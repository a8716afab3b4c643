"""The operator's MCP face: the surface through which the person's other agents read and shape the
operator's state (``tickloop mcp serve``, extra ``mcp``).

- :mod:`tickloop.mcp.face`: the resources and tools, over the store; no MCP SDK.
- :mod:`tickloop.mcp.server`: the face registered on the SDK's ``MCPServer`` (imports the SDK).
- :mod:`tickloop.mcp.http`: streamable HTTP behind a guard (token, Origin, size cap, rate limit).
- :mod:`tickloop.mcp.token`: the bearer token, kept as a hash in a 0600 file.
- :mod:`tickloop.mcp.run`: what ``tickloop mcp serve`` does.

Nothing on this face can make anything happen in the world: it never executes, approves or denies
an intent, activates a goal, or reads or changes the gate, tiers, dry-run, schedules, channels or
secrets. Only the executor acts, and approval belongs to the person.
"""
