-- A person's way back from a dead end is a decision like an approval: `retry` hands a failed or
-- needs_human intent back to the executor, `done_by_hand` and `did_not_happen` reconcile a
-- needs_human one.
ALTER TABLE decisions DROP CONSTRAINT decisions_kind_check;
ALTER TABLE decisions ADD CONSTRAINT decisions_kind_check
    CHECK (kind IN ('approve', 'deny', 'retry', 'done_by_hand', 'did_not_happen'));
-- The drift guard looks up the retries a person sanctioned.
CREATE INDEX decisions_kind ON decisions(profile, kind, decided_at);
