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

-- name: list_conditions
SELECT * FROM monitor_conditions
WHERE :profiles IS NULL OR profile IN (SELECT value FROM json_each(:profiles))
ORDER BY profile, name;

-- name: loop_stats
-- One pass over the progress table for every profile in scope (see Store.loop_stats); the three
-- window values share one window, so the rows are ordered once.
WITH scope AS (
    SELECT name AS profile FROM profiles
    WHERE :profiles IS NULL OR name IN (SELECT value FROM json_each(:profiles))
), ranked AS (
    SELECT p.profile, p.tick_kind, p.outcome, p.state_hash, p.ended_at,
           ROW_NUMBER() OVER w AS rn,
           SUM(CASE WHEN p.tick_kind = 'fast' THEN 1 ELSE 0 END) OVER w AS frn,
           FIRST_VALUE(p.state_hash) OVER w AS head_hash
    FROM progress AS p JOIN scope AS s ON s.profile = p.profile
    WINDOW w AS (PARTITION BY p.profile ORDER BY p.id DESC ROWS UNBOUNDED PRECEDING)
), agg AS (
    SELECT profile,
           MAX(CASE WHEN rn = 1 THEN ended_at END) AS newest_at,
           MIN(CASE WHEN tick_kind = 'fast' AND frn <= :window AND outcome IN ('done', 'staged')
                    THEN frn END) AS first_progress,
           MAX(CASE WHEN tick_kind = 'fast' AND frn <= :window THEN frn END) AS fast_seen,
           MIN(CASE WHEN rn <= :window AND state_hash <> head_hash THEN rn END) AS first_change,
           MAX(CASE WHEN rn <= :window THEN rn END) AS rows_seen
    FROM ranked
    GROUP BY profile
)
SELECT s.profile, a.newest_at,
       COALESCE(a.first_progress - 1, a.fast_seen, 0) AS no_progress_streak,
       COALESCE(a.first_change - 1, a.rows_seen, 0) AS board_unchanged_ticks,
       g.profile IS NOT NULL AS has_active_goal,
       COALESCE(w.waiting, 0) AS waiting_approvals
FROM scope AS s
LEFT JOIN agg AS a ON a.profile = s.profile
LEFT JOIN goal_models AS g ON g.profile = s.profile AND g.status = 'active'
LEFT JOIN (SELECT profile, COUNT(*) AS waiting FROM intents WHERE status = 'requires_approval'
           GROUP BY profile) AS w ON w.profile = s.profile
ORDER BY s.profile;
