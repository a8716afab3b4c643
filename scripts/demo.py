"""`make demo`: until the harness lands, show the grammar, the policies and a verified ledger."""
