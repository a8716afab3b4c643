-- PostgreSQL's own queries.

-- name: claim_intents
-- SKIP LOCKED: concurrent executors each lock different rows instead of queueing on the same ones;
-- the outer status test re-checks the row after the lock, so a claim is compare-and-set.
UPDATE intents
SET status = 'claimed', claim_prior = status, claim_owner = :owner, claimed_at = :now, updated_at = :now
WHERE id IN (SELECT id FROM intents
             WHERE profile = :profile AND status IN ('ready', 'approved') AND created_at >= :since
             ORDER BY id LIMIT :limit
             FOR UPDATE SKIP LOCKED)
  AND status IN ('ready', 'approved')
RETURNING *;

-- name: search_notes
SELECT id, profile, text, source, tainted, created_at FROM notes
WHERE profile = :profile AND tsv @@ plainto_tsquery('simple', :query)
ORDER BY id DESC LIMIT :limit;

-- name: try_tick_lock
-- Session-level: held by this connection for the tick, released on unlock or when the process dies.
SELECT pg_try_advisory_lock(hashtext(current_schema() || ':' || :profile), hashtext(:tick_kind)) AS got;

-- name: drop_tick_lock
SELECT pg_advisory_unlock(hashtext(current_schema() || ':' || :profile), hashtext(:tick_kind)) AS dropped;
