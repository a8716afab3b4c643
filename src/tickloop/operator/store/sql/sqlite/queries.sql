-- SQLite's own queries. Claims need no row locks: every write runs under BEGIN IMMEDIATE, which
-- takes the database's single write lock before reading, so the SELECT and UPDATE cannot interleave.

-- name: claim_intents
UPDATE intents
SET status = 'claimed', claim_prior = status, claim_owner = :owner, claimed_at = :now, updated_at = :now
WHERE id IN (SELECT id FROM intents
             WHERE profile = :profile AND status IN ('ready', 'approved') AND created_at >= :since
             ORDER BY id LIMIT :limit)
  AND status IN ('ready', 'approved')
RETURNING *;

-- name: search_notes
SELECT n.id, n.profile, n.text, n.source, n.tainted, n.created_at
FROM notes_fts JOIN notes AS n ON n.id = notes_fts.rowid
WHERE notes_fts MATCH :query AND n.profile = :profile
ORDER BY n.id DESC LIMIT :limit;

-- name: take_tick_lock
-- A lease: taken when free or when the previous holder's lease has expired (a crashed tick).
INSERT INTO tick_locks (profile, tick_kind, owner, acquired_at, expires_at)
VALUES (:profile, :tick_kind, :owner, :now, :expires_at)
ON CONFLICT (profile, tick_kind) DO UPDATE
SET owner = excluded.owner, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
WHERE tick_locks.expires_at <= excluded.acquired_at;

-- name: drop_tick_lock
DELETE FROM tick_locks WHERE profile = :profile AND tick_kind = :tick_kind AND owner = :owner;

-- name: tick_lock_owner
SELECT owner FROM tick_locks WHERE profile = :profile AND tick_kind = :tick_kind;

-- name: reclaim_tick_lock
-- Only if the dead holder still holds it (another process may have reclaimed it meanwhile).
DELETE FROM tick_locks WHERE profile = :profile AND tick_kind = :tick_kind AND owner = :dead_owner;
