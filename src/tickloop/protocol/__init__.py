"""The Tick Protocol, pure: no files, network, environment or clock reads.

Everything here decides from its arguments alone, so any harness can host it and tests can cover it
exhaustively. The modules follow the spec's sections: ``command`` (grammar), ``policy`` (compile and
freeze), ``envelope`` (the time-step message), ``run`` (state machine), ``predicates`` (admission
and scheduling), ``ledger`` (records, canonical JSON, ``verify``).
"""
