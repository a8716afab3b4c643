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

-- name: list_conditions
SELECT * FROM monitor_conditions
WHERE CAST(:profiles AS jsonb) IS NULL OR profile IN (SELECT jsonb_array_elements_text(CAST(:profiles AS jsonb)))
ORDER BY profile, name;

-- name: loop_stats
-- One pass over the progress table for every profile in scope (see Store.loop_stats); the three
-- window values share one window, so the rows are ordered once.
WITH scope AS (
    SELECT name AS profile FROM profiles
    WHERE CAST(:profiles AS jsonb) IS NULL OR name IN (SELECT jsonb_array_elements_text(CAST(:profiles AS jsonb)))
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
