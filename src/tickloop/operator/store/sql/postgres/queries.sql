-- PostgreSQL's own queries.

-- name: claim_intents
-- SKIP LOCKED: concurrent executors each lock different rows instead of queueing on the same ones.
-- Compare-and-set without a second status test: FOR UPDATE re-checks the inner WHERE against the
-- newest version of each row it locks (a row changed since the statement began is dropped), and a
-- locked row cannot change before this UPDATE (tests/integration/store/test_claim_lock.py).
UPDATE intents
SET status = 'claimed', claim_prior = status, claim_owner = :owner, claimed_at = :now, updated_at = :now
WHERE id IN (SELECT id FROM intents
             WHERE profile = :profile AND status IN ('ready', 'approved') AND created_at >= :since
             ORDER BY id LIMIT :limit
             FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: recent_progress
-- The profile is a range of one value and the order names it, so only the (profile, id) index gives
-- this order. With `profile = $1 ORDER BY id DESC` (the shared query, which SQLite keeps), a prepared
-- statement's generic plan walked the primary key backward through every other profile's newer rows:
-- 140 ms instead of 0.05 ms behind 300,000 of them (tests/integration/store/test_fast_tick_plans.py).
SELECT * FROM progress WHERE profile >= :profile AND profile <= :profile
ORDER BY profile DESC, id DESC LIMIT :limit;

-- name: recent_progress_kind
SELECT * FROM progress WHERE profile >= :profile AND profile <= :profile AND tick_kind = :tick_kind
ORDER BY profile DESC, id DESC LIMIT :limit;

-- name: finish_and_send
-- The executor's hand-over as ONE statement (one round trip, one commit): end_sending and
-- start_sending on two different rows, each its own compare-and-set. A NULL id matches no row.
-- Each UPDATE re-checks its WHERE against the newest row version after waiting for a concurrent
-- writer (the reaper, a release), as on its own. Only the ids come back: what each half won.
WITH ended AS (
    UPDATE intents SET status = :status, result = :result, handoff = :handoff, dry_run = FALSE,
                       updated_at = :now
    WHERE profile = :profile AND id = :end_id AND status = 'sending' AND claim_owner = :owner
    RETURNING id
), sending AS (
    UPDATE intents SET status = 'sending', updated_at = :now
    WHERE profile = :profile AND id = :send_id AND status = 'claimed' AND claim_owner = :owner
    RETURNING id
)
SELECT id FROM ended UNION ALL SELECT id FROM sending;

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
    SELECT s.name AS profile, a.newest_at AS newest_raw, EXTRACT(EPOCH FROM a.newest_at) AS newest_at,
           LEAST(COALESCE(a.fast_seen, 0) - COALESCE(a.last_progress, 0), :window) AS no_progress_streak,
           LEAST(COALESCE(a.seen - a.last_change + 1, 0), :window) AS board_unchanged_ticks,
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
   OR x.profile IN (SELECT profile FROM monitor_conditions WHERE active = TRUE)
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
        WHERE profile IN (SELECT jsonb_array_elements_text(CAST(:profiles AS jsonb)))
        WINDOW w AS (PARTITION BY profile ORDER BY id)
    ) AS ranked
    GROUP BY profile
)
SELECT * FROM (
    SELECT s.name AS profile, a.newest_at AS newest_raw, EXTRACT(EPOCH FROM a.newest_at) AS newest_at,
           LEAST(COALESCE(a.fast_seen, 0) - COALESCE(a.last_progress, 0), :window) AS no_progress_streak,
           LEAST(COALESCE(a.seen - a.last_change + 1, 0), :window) AS board_unchanged_ticks,
           g.profile IS NOT NULL AS has_active_goal,
           COALESCE(w.waiting, 0) AS waiting_approvals
    FROM profiles AS s
    LEFT JOIN stats AS a ON a.profile = s.name
    LEFT JOIN goal_models AS g ON g.profile = s.name AND g.status = 'active'
    LEFT JOIN (SELECT profile, COUNT(*) AS waiting FROM intents WHERE status = 'requires_approval'
               GROUP BY profile) AS w ON w.profile = s.name
    WHERE s.name IN (SELECT jsonb_array_elements_text(CAST(:profiles AS jsonb)))
) AS x
-- The flagged filter: with :min_streak = 0 every profile passes.
WHERE x.no_progress_streak >= :min_streak OR x.board_unchanged_ticks >= :min_board
   OR x.newest_raw <= :silent_before OR NOT x.has_active_goal
   OR x.profile IN (SELECT profile FROM monitor_conditions WHERE active = TRUE)
ORDER BY x.profile;

-- name: observations_by_id
-- The observations an intent recorded it was fed by (ids as a JSON array).
SELECT * FROM observations
WHERE profile = :profile AND id IN (SELECT value::bigint FROM jsonb_array_elements_text(CAST(:ids AS jsonb)))
ORDER BY observed_at, id;

-- name: overview_snapshot
-- The dashboard's overview in ONE statement (one round trip instead of about twenty): each part a
-- subselect along its own index, rows as JSON (text columns stay JSON strings, times ISO strings,
-- which the row converters already read).
SELECT
  (SELECT row_to_json(p) FROM profiles p WHERE p.name = :profile) AS profile,
  (SELECT row_to_json(g) FROM goal_models g WHERE g.profile = :profile AND g.status = 'active') AS goal,
  (SELECT row_to_json(s) FROM plan_steps s
   WHERE s.profile = :profile AND s.status = 'pending'
     AND s.goal_version = (SELECT version FROM goal_models WHERE profile = :profile AND status = 'active')
   ORDER BY s.position LIMIT 1) AS step,
  (SELECT json_agg(r) FROM jsonb_array_elements_text(CAST(:kinds AS jsonb)) AS k(kind)
   CROSS JOIN LATERAL (SELECT * FROM progress
                       WHERE profile >= :profile AND profile <= :profile AND tick_kind = k.kind
                       ORDER BY profile DESC, id DESC LIMIT 1) r) AS last_ticks,
  (SELECT json_agg(i ORDER BY i.id DESC) FROM (SELECT * FROM intents
   WHERE profile = :profile AND status = 'requires_approval' ORDER BY id DESC LIMIT :waiting) i) AS waiting,
  (SELECT COUNT(*) FROM intents WHERE profile = :profile AND status = 'requires_approval') AS waiting_count,
  (SELECT json_agg(c) FROM monitor_conditions c WHERE c.profile = :profile) AS conditions,
  (SELECT json_agg(a ORDER BY a.id) FROM attention_spends a
   WHERE a.profile = :profile AND a.spent_at >= :since) AS spends,
  (SELECT MAX(ran_at) FROM monitor_passes WHERE scope = '' OR scope = :profile) AS monitor_ran_at;
