"""The five ticks. Each module has ``run(ctx: TickContext) -> TickResult`` and may have
``after(ctx, result)`` (best effort, after the row is recorded: e.g. the fast tick's self-critique)."""
