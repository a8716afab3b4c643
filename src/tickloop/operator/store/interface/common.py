"""Names every part of the store interface shares."""

from __future__ import annotations

from datetime import UTC, datetime

#: The ephemeral kinds ``prune`` deletes from, in the order it reports them.
PRUNABLE = ("progress", "observations", "notifications", "states_of_play")
#: The start of time for "since" windows that are not given.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
