-- SQLite's own queries. Claims need no row locks: every write runs under BEGIN IMMEDIATE, which
-- takes the database's single write lock before reading, so the SELECT and UPDATE cannot interleave.

-- name: claim_intents
-- One statement under the write lock: no row can change between its SELECT and its UPDATE.
UPDATE intents
SET status = 'claimed', claim_prior = status, claim_owner = :owner, claimed_at = :now, updated_at = :now
WHERE id IN (SELECT id FROM intents
             WHERE profile = :profile AND status IN ('ready', 'approved') AND created_at >= :since
             ORDER BY id LIMIT :limit)
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

-- name: loop_stats_all
-- Every profile's monitor statistics in one statement (see Store.loop_stats). The window runs in
-- (profile, id) order, the order of the progress_recent index, and counts from the newest row back:
-- a streak is the rows after the last one that broke it (the board's: since its hash last changed),
-- capped at :window. One window definition, so the rows pass through one WindowAgg.
WITH stats AS (
    SELECT profile,
           MAX(ended_at) AS newest_at,
           COUNT(*) AS seen,
           MAX(CASE WHEN run_starts THEN rn END) AS last_change,
           MAX(frn) AS fast_seen,
           MAX(CASE WHEN tick_kind = 'fast' AND outcome IN ('done', 'staged') THEN frn END) AS last_progress
    FROM (
        SELECT profile, tick_kind, outcome, state_hash, ended_at,
               ROW_NUMBER() OVER w AS rn,
               SUM(CASE WHEN tick_kind = 'fast' THEN 1 ELSE 0 END) OVER w AS frn,
               (state_hash IS DISTINCT FROM LAG(state_hash) OVER w) AS run_starts
        FROM progress
        WINDOW w AS (PARTITION BY profile ORDER BY id)
    ) AS ranked
    GROUP BY profile
)
SELECT * FROM (
    SELECT s.name AS profile, a.newest_at AS newest_raw, a.newest_at AS newest_at,
           MIN(COALESCE(a.fast_seen, 0) - COALESCE(a.last_progress, 0), :window) AS no_progress_streak,
           MIN(COALESCE(a.seen - a.last_change + 1, 0), :window) AS board_unchanged_ticks,
           g.profile IS NOT NULL AS has_active_goal,
           COALESCE(w.waiting, 0) AS waiting_approvals
    FROM profiles AS s
    LEFT JOIN stats AS a ON a.profile = s.name
    LEFT JOIN goal_models AS g ON g.profile = s.name AND g.status = 'active'
    LEFT JOIN (SELECT profile, COUNT(*) AS waiting FROM intents WHERE status = 'requires_approval'
               GROUP BY profile) AS w ON w.profile = s.name
) AS x
-- The flagged filter: with :min_streak = 0 every profile passes.
WHERE x.no_progress_streak >= :min_streak OR x.board_unchanged_ticks >= :min_board
   OR x.newest_raw <= :silent_before OR NOT x.has_active_goal
   OR x.profile IN (SELECT profile FROM monitor_conditions WHERE active = 1)
ORDER BY x.profile;

-- name: loop_stats
-- Every profile's monitor statistics in one statement (see Store.loop_stats). The window runs in
-- (profile, id) order, the order of the progress_recent index, and counts from the newest row back:
-- a streak is the rows after the last one that broke it (the board's: since its hash last changed),
-- capped at :window. One window definition, so the rows pass through one WindowAgg.
WITH stats AS (
    SELECT profile,
           MAX(ended_at) AS newest_at,
           COUNT(*) AS seen,
           MAX(CASE WHEN run_starts THEN rn END) AS last_change,
           MAX(frn) AS fast_seen,
           MAX(CASE WHEN tick_kind = 'fast' AND outcome IN ('done', 'staged') THEN frn END) AS last_progress
    FROM (
        SELECT profile, tick_kind, outcome, state_hash, ended_at,
               ROW_NUMBER() OVER w AS rn,
               SUM(CASE WHEN tick_kind = 'fast' THEN 1 ELSE 0 END) OVER w AS frn,
               (state_hash IS DISTINCT FROM LAG(state_hash) OVER w) AS run_starts
        FROM progress
        WHERE profile IN (SELECT value FROM json_each(:profiles))
        WINDOW w AS (PARTITION BY profile ORDER BY id)
    ) AS ranked
    GROUP BY profile
)
SELECT * FROM (
    SELECT s.name AS profile, a.newest_at AS newest_raw, a.newest_at AS newest_at,
           MIN(COALESCE(a.fast_seen, 0) - COALESCE(a.last_progress, 0), :window) AS no_progress_streak,
           MIN(COALESCE(a.seen - a.last_change + 1, 0), :window) AS board_unchanged_ticks,
           g.profile IS NOT NULL AS has_active_goal,
           COALESCE(w.waiting, 0) AS waiting_approvals
    FROM profiles AS s
    LEFT JOIN stats AS a ON a.profile = s.name
    LEFT JOIN goal_models AS g ON g.profile = s.name AND g.status = 'active'
    LEFT JOIN (SELECT profile, COUNT(*) AS waiting FROM intents WHERE status = 'requires_approval'
               GROUP BY profile) AS w ON w.profile = s.name
    WHERE s.name IN (SELECT value FROM json_each(:profiles))
) AS x
-- The flagged filter: with :min_streak = 0 every profile passes.
WHERE x.no_progress_streak >= :min_streak OR x.board_unchanged_ticks >= :min_board
   OR x.newest_raw <= :silent_before OR NOT x.has_active_goal
   OR x.profile IN (SELECT profile FROM monitor_conditions WHERE active = 1)
ORDER BY x.profile;

-- name: observations_by_id
-- The observations an intent recorded it was fed by (ids as a JSON array).
SELECT * FROM observations
WHERE profile = :profile AND id IN (SELECT value FROM json_each(:ids))
ORDER BY observed_at, id;

-- name: search_intents
-- As the shared query, along intents_recent by name: with one profile's statistics SQLite chose the
-- primary key (rowid < :before), which walks every other profile's newer intents too.
SELECT * FROM intents INDEXED BY intents_recent
WHERE profile = :profile AND id < :before
  AND (:action_type = '' OR action_type = :action_type)
  AND lower(title) LIKE :p1 ESCAPE '\' AND lower(title) LIKE :p2 ESCAPE '\' AND lower(title) LIKE :p3 ESCAPE '\'
ORDER BY id DESC LIMIT :limit;
