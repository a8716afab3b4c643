"""Which rule may stop a run in each phase: the spec's matrix, every cell of it.

``STOP_RULES`` and the sets after a terminal in ``protocol/transitions.py`` decide whether a
``loop_stopped`` is consistent with where its run was: a person's ``/tick stop`` only between steps
(a pending step is cancelled first), a failed turn only after a terminal that did not complete, an
inconsistent turn only while one is enqueued. A mutation run found single cells free to change, so
each (phase, rule) pair is written out here and checked against verify.
"""

from __future__ import annotations

import pytest
from test_verify_table import PREFIXES, R, build, rec

from tickloop.protocol.ledger import RULES
from tickloop.protocol.verify import verify

STOPS = sorted(RULES[R.LOOP_STOPPED])
INTERRUPTING = {"stop.user", "stop.disposed", "stop.token_budget", "recover.orphaned_run"}
AFTER_COMPLETED = {"next.count_out_of_window", "recover.orphaned_run", "stop.token_budget"}
#: The phases a run can be stopped in, as a ledger prefix each.
PHASES = {
    **{name: PREFIXES[name] for name in ("armed", "waiting", "scheduled", "enqueued", "cancelled")},
    "ended, a step still to go": PREFIXES["ended"],
    "ended, the last step": PREFIXES["ended_last"],
    "ended in error": [*PREFIXES["ended"][:3], rec(R.TICK_TERMINAL, step=1, status="error")],
}
#: phase -> the stop rules it allows
ALLOWED: dict[str, set[str]] = {
    "armed": INTERRUPTING,
    "waiting": INTERRUPTING | {"next.terminal_not_completed", "next.count_out_of_window"},
    "scheduled": {"recover.orphaned_run"},
    "enqueued": INTERRUPTING | {"stop.inconsistent_turn"},
    "cancelled": {"cancel.state_changed", "recover.orphaned_run"},  # the cancel's own rule, or a crash
    "ended, a step still to go": AFTER_COMPLETED | {"stop.user", "stop.disposed"},
    "ended, the last step": AFTER_COMPLETED,
    "ended in error": AFTER_COMPLETED | {"next.terminal_not_completed"},
}


def test_the_matrix_names_every_phase_and_only_known_rules() -> None:
    assert set(PHASES) == set(ALLOWED)
    assert set().union(*ALLOWED.values()) <= set(STOPS)


@pytest.mark.parametrize("phase", sorted(PHASES))
@pytest.mark.parametrize("rule", STOPS)
def test_a_stop_is_consistent_exactly_where_the_matrix_says(phase: str, rule: str) -> None:
    items = [*PHASES[phase], rec(R.LOOP_STOPPED, rule=rule)]
    found = [(v.line, v.rule) for v in verify(build(items)).violations]
    if rule in ALLOWED[phase]:
        assert found == []
    else:
        assert found == [(len(items), "verify.stop_rule_mismatch")]
