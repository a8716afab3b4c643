"""The dataset's tables: each column's name, type and meaning (docs/experiments.md and the Parquet schema
metadata print them), and the schema's version.

A type ending in ``?`` is nullable: null means unknown (a provider that reported no usage, a step
before the first, a session that never armed its run), never zero.
"""

from __future__ import annotations

#: Bumped whenever a column is added, removed, renamed or changes meaning.
SCHEMA_VERSION = "tickloop.dataset.v2"

Columns = tuple[tuple[str, str, str], ...]

_GRID: Columns = (
    ("experiment", "string", "the spec's name"),
    ("cell", "string", "model/policy, then the level of each other factor that varies"),
    ("replicate", "int", "1-based replicate within the cell"),
    ("session", "string", "harness session id"),
    ("model", "string", "endpoint name (never its URL)"),
    ("policy_id", "string", "tick policy id"),
    ("policy_sha256", "string?", "sha256 of the policy's time-step text"),
    ("opening", "string?", "the opening variant's name (default: the spec's one opening)"),
    ("tools", "string?", "the tools level: none, a toolset, or a name from the spec's [toolsets]"),
    ("temperature", "float?", "the sampling temperature sent (null: the server's default)"),
)

#: One row per time step; step 0 is the opening turn (the session's baseline).
STEP_COLUMNS: Columns = (
    *_GRID,
    ("step", "int", "time step; 0 is the opening turn"),
    ("status", "string", "the turn's terminal: completed, error, interrupted, cancelled"),
    ("finish_reason", "string?", "the provider's finish reason (stop, length, tool_calls, ...)"),
    ("input_tokens", "int?", "reported input tokens (null when the provider reported none)"),
    ("output_tokens", "int?", "reported output tokens (null when the provider reported none)"),
    ("usage_reported", "bool", "whether the provider reported usage for the step"),
    ("cumulative_input_tokens", "int?", "input tokens of steps 0..this (null once one is unknown)"),
    ("cumulative_output_tokens", "int?", "output tokens of steps 0..this (null once one is unknown)"),
    ("start_offset_ms", "float", "when the step's turn began, in ms from the session's start"),
    ("ttft_ms", "float?", "from the turn's first request to its first streamed text, ms (null: no text)"),
    ("latency_ms", "float", "from the turn's first request to its terminal, ms"),
    ("response_words", "int", "whitespace-separated words of the reply"),
    ("tool_calls", "int", "tool calls made within the step's turn"),
    ("changed_from_previous", "bool?", "the reply differs from the previous step's (null for step 0)"),
    ("end_rule", "string?", "the rule that ended the session's run"),
    (
        "text_hash",
        "string",
        "keyed digest of the reply (hmac-sha256: under the run key); sha256: with --no-redact",
    ),
    ("text_length", "int", "characters of the reply"),
    ("text", "string?", "the reply, scrubbed (only with --keep-text)"),
)

#: One row per session (its last finished attempt).
SESSION_COLUMNS: Columns = (
    *_GRID,
    ("attempt", "int", "1, or more when earlier attempts were abandoned"),
    ("status", "string", "complete, stopped, refused, no_run or crashed"),
    ("end_rule", "string?", "the rule that ended the run (loop_complete / loop_stopped / refusal)"),
    ("steps_planned", "int", "time steps the session asked for"),
    ("steps_completed", "int", "time steps whose terminal was completed"),
    ("input_tokens", "int?", "input tokens of its step rows, summed (null when one reported none)"),
    ("output_tokens", "int?", "output tokens of its step rows, summed (null when one reported none)"),
    ("usage_reported", "bool?", "every turn reported usage (null: no turn was measured)"),
    ("tool_calls", "int", "tool calls over all its turns"),
    ("mean_latency_ms", "float?", "mean turn latency, ms (null: no turn)"),
    ("mean_ttft_ms", "float?", "mean time to first text, ms (null: no turn streamed text)"),
    ("wall_ms", "float", "the session's duration, ms"),
    ("cause", "string?", "why a refused or crashed session failed, as a short code (http_429, connect, ...)"),
    ("error_hash", "string?", "keyed digest of the failure's text"),
    ("error", "string?", "the failure's text, scrubbed (only with --keep-text)"),
)

#: One row per model of the run: how the run can be reproduced (``runs`` table).
RUN_COLUMNS: Columns = (
    ("experiment", "string", "the spec's name"),
    ("schema_version", "string", "this dataset's schema version"),
    ("tickloop_version", "string", "tickloop's version when the run began"),
    ("spec_sha256", "string", "sha256 of the spec file"),
    ("opening_sha256", "string", "sha256 of each opening line, by variant, as JSON ({name: [sha256, ...]})"),
    ("model", "string", "endpoint name"),
    ("model_id", "string?", "the model id configured for the endpoint (null: the built-in offline model)"),
    ("returned_model_ids", "string?", "the model ids the provider returned, comma-separated"),
    ("temperature", "float?", "temperature sent (null: not sent, the server's default)"),
    ("top_p", "float?", "top_p sent (null: not sent)"),
    ("seed", "int?", "seed sent (null: not sent)"),
    ("max_tokens", "int?", "max_tokens sent (null: not sent)"),
)

TABLES: dict[str, Columns] = {"steps": STEP_COLUMNS, "sessions": SESSION_COLUMNS, "runs": RUN_COLUMNS}
