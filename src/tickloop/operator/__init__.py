"""The operator loop: one-shot ticks over a shared store, a gate, an executor, a monitor."""
