"""The Tick Protocol, pure: no files, network, environment or clock reads.

Everything here decides from its arguments alone, so any harness can host it and tests can cover it
exhaustively. The modules follow the spec's sections: ``command`` (grammar), ``policy`` (compile and
freeze), ``envelope`` (the time-step message), ``run`` (state machine), ``predicates`` (admission
and scheduling), ``ledger`` (records, canonical JSON, ``verify``).
"""

from tickloop.protocol.command import ControlOp, TickControl, TickStart, parse_tick
from tickloop.protocol.envelope import (
    PLUGIN_SOURCE,
    USER_SOURCE,
    Message,
    Source,
    count_time_steps,
    is_time_step,
    time_step_message,
)
from tickloop.protocol.ledger import RecordType, Seal, canonical, decode, loads_bounded, record
from tickloop.protocol.policy import CompiledPolicy, PolicySet, compile_policy, is_valid_policy_id
from tickloop.protocol.predicates import Decision, Next, SessionView, TerminalStatus, admit, next_step
from tickloop.protocol.report import VerifyReport, Violation
from tickloop.protocol.run import Run, RunState, check_transition
from tickloop.protocol.verify import Verifier, verify

__all__ = [
    "PLUGIN_SOURCE",
    "USER_SOURCE",
    "CompiledPolicy",
    "ControlOp",
    "Decision",
    "Message",
    "Next",
    "PolicySet",
    "RecordType",
    "Run",
    "RunState",
    "Seal",
    "SessionView",
    "Source",
    "TerminalStatus",
    "TickControl",
    "TickStart",
    "Verifier",
    "VerifyReport",
    "Violation",
    "admit",
    "canonical",
    "check_transition",
    "compile_policy",
    "count_time_steps",
    "decode",
    "is_time_step",
    "is_valid_policy_id",
    "loads_bounded",
    "next_step",
    "parse_tick",
    "record",
    "time_step_message",
    "verify",
]
