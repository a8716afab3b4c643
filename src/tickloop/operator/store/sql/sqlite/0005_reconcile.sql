-- A person's way back from a dead end is a decision like an approval: `retry` hands a failed or
-- needs_human intent back to the executor, `done_by_hand` and `did_not_happen` reconcile a
-- needs_human one. SQLite cannot alter a CHECK, so the table is rebuilt (nothing references it).
CREATE TABLE decisions_v5 (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    intent_id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('approve', 'deny', 'retry', 'done_by_hand', 'did_not_happen')),
    by_whom TEXT NOT NULL,
    note TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    FOREIGN KEY (intent_id, profile) REFERENCES intents(id, profile)
);
INSERT INTO decisions_v5 (id, profile, intent_id, kind, by_whom, note, decided_at)
SELECT id, profile, intent_id, kind, by_whom, note, decided_at FROM decisions;
DROP TABLE decisions;
ALTER TABLE decisions_v5 RENAME TO decisions;
-- The drift guard looks up the retries a person sanctioned.
CREATE INDEX decisions_kind ON decisions(profile, kind, decided_at);
