-- Named queries shared by the SQLite and PostgreSQL backends (`:name` parameters, always bound).
-- A backend's own queries.sql overrides a name here where the dialects differ.
-- Every state change is a compare-and-set: the WHERE names the prior state; the caller checks
-- the row count (or the RETURNING rows) and treats zero as "someone else got there first".

-- name: create_profile
INSERT INTO profiles (name, display_name, timezone, created_at)
VALUES (:name, :display_name, :timezone, :now)
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- name: get_profile
SELECT * FROM profiles WHERE name = :name;

-- name: update_profile
-- NULL keeps a field as it is.
UPDATE profiles SET display_name = COALESCE(:display_name, display_name), timezone = COALESCE(:timezone, timezone)
WHERE name = :name
RETURNING *;

-- name: list_profiles
SELECT * FROM profiles ORDER BY name;

-- name: add_goal_model
INSERT INTO goal_models (profile, version, status, title, body, data, created_at, activated_at)
VALUES (:profile,
        (SELECT COALESCE(MAX(version), 0) + 1 FROM goal_models WHERE profile = :profile),
        'draft', :title, :body, :data, :now, NULL)
RETURNING *;

-- name: get_goal_model
SELECT * FROM goal_models WHERE profile = :profile AND version = :version;

-- name: active_goal_model
SELECT * FROM goal_models WHERE profile = :profile AND status = 'active';

-- name: list_goal_models
SELECT * FROM goal_models WHERE profile = :profile ORDER BY version;

-- name: retire_active_goal
UPDATE goal_models SET status = 'retired'
WHERE profile = :profile AND status = 'active' AND version <> :version;

-- name: activate_goal
UPDATE goal_models SET status = 'active', activated_at = :now
WHERE profile = :profile AND version = :version AND status <> 'active'
RETURNING *;

-- name: add_task
INSERT INTO tasks (profile, title, priority, status, notes, created_at, updated_at)
VALUES (:profile, :title, :priority, 'todo', :notes, :now, :now)
RETURNING *;

-- name: get_task
SELECT * FROM tasks WHERE profile = :profile AND id = :id;

-- name: list_tasks
SELECT * FROM tasks WHERE profile = :profile ORDER BY priority DESC, id;

-- name: set_task_status
UPDATE tasks SET status = :status, updated_at = :now
WHERE profile = :profile AND id = :id AND status = :expected
RETURNING *;

-- name: delete_pending_steps
DELETE FROM plan_steps WHERE profile = :profile AND goal_version = :goal_version AND status = 'pending';

-- name: max_step_position
SELECT COALESCE(MAX(position), -1) AS top FROM plan_steps
WHERE profile = :profile AND goal_version = :goal_version;

-- name: add_step
INSERT INTO plan_steps (profile, goal_version, position, title, task_id, status, updated_at)
VALUES (:profile, :goal_version, :position, :title, :task_id, 'pending', :now)
RETURNING *;

-- name: list_plan
SELECT * FROM plan_steps WHERE profile = :profile AND goal_version = :goal_version ORDER BY position;

-- name: current_plan_step
SELECT * FROM plan_steps
WHERE profile = :profile AND goal_version = :goal_version AND status = 'pending'
ORDER BY position LIMIT 1;

-- name: get_step
SELECT * FROM plan_steps WHERE profile = :profile AND id = :id;

-- name: set_step_status
UPDATE plan_steps SET status = :status, updated_at = :now
WHERE profile = :profile AND id = :id AND status = :expected
RETURNING *;

-- name: stage_intent
INSERT INTO intents (profile, action_type, title, recipient, payload, tier, status, verdict,
                     verdict_reasons, decision_id, claim_owner, claimed_at, claim_prior, dry_run,
                     result, handoff, origin_tick, origin_tainted, created_at, updated_at)
VALUES (:profile, :action_type, :title, :recipient, :payload, :tier, 'proposed', NULL,
        '[]', NULL, NULL, NULL, NULL, :dry_run, NULL, :handoff, :origin_tick, :origin_tainted,
        :now, :now)
RETURNING *;

-- name: get_intent
SELECT * FROM intents WHERE profile = :profile AND id = :id;

-- name: list_intents
SELECT * FROM intents WHERE profile = :profile ORDER BY id DESC LIMIT :limit;

-- name: list_intents_by_status
SELECT * FROM intents WHERE profile = :profile AND status = :status ORDER BY id DESC LIMIT :limit;

-- name: record_verdict
UPDATE intents SET status = :status, verdict = :verdict, verdict_reasons = :reasons, updated_at = :now
WHERE profile = :profile AND id = :id AND status = 'proposed'
RETURNING *;

-- name: move_intent
UPDATE intents SET status = :status, updated_at = :now
WHERE profile = :profile AND id = :id AND status = :expected
RETURNING *;

-- name: add_decision
INSERT INTO decisions (profile, intent_id, kind, by_whom, note, decided_at)
VALUES (:profile, :intent_id, :kind, :by_whom, :note, :now)
RETURNING *;

-- name: decide_intent
UPDATE intents SET status = :status, decision_id = :decision_id, updated_at = :now
WHERE profile = :profile AND id = :id AND status = 'requires_approval'
RETURNING *;

-- name: get_decision
SELECT * FROM decisions WHERE profile = :profile AND id = :id;

-- name: release_claim
UPDATE intents SET status = claim_prior, claim_owner = NULL, claimed_at = NULL, claim_prior = NULL,
                   updated_at = :now
WHERE profile = :profile AND id = :id AND status = 'claimed' AND claim_owner = :owner
RETURNING *;

-- name: mark_sending
UPDATE intents SET status = 'sending', updated_at = :now
WHERE profile = :profile AND id = :id AND status = 'claimed' AND claim_owner = :owner
RETURNING *;

-- name: finish_intent
-- :from_a and :from_b are the statuses this ending may come from (claimed and/or sending).
-- Only an armed executor ends a claim (a dry pass never does), so the ending clears dry_run.
UPDATE intents SET status = :status, result = :result, handoff = :handoff, dry_run = FALSE,
                   updated_at = :now
WHERE profile = :profile AND id = :id AND status IN (:from_a, :from_b) AND claim_owner = :owner
RETURNING *;

-- name: end_sending
-- The executor's hand-over (finish_and_send), first half: the end of a side effect, so only a
-- `sending` claim of this owner.
UPDATE intents SET status = :status, result = :result, handoff = :handoff, dry_run = FALSE,
                   updated_at = :now
WHERE profile = :profile AND id = :end_id AND status = 'sending' AND claim_owner = :owner;

-- name: start_sending
-- The hand-over's second half: mark_sending without returning the row.
UPDATE intents SET status = 'sending', updated_at = :now
WHERE profile = :profile AND id = :send_id AND status = 'claimed' AND claim_owner = :owner;

-- name: reap_stuck
-- The guard lives in the WHERE: only a claim still `sending` and claimed before the cutoff. A
-- completing executor's own UPDATE requires `sending` too, so exactly one of the two wins.
UPDATE intents SET status = 'needs_human', dry_run = FALSE, updated_at = :now
WHERE status = 'sending' AND claimed_at < :cutoff
RETURNING id;

-- name: reap_stuck_profile
UPDATE intents SET status = 'needs_human', dry_run = FALSE, updated_at = :now
WHERE profile = :profile AND status = 'sending' AND claimed_at < :cutoff
RETURNING id;

-- name: reconcile_intent
-- A person's reconciling decision (retry, done by hand, did not happen): compare-and-set on the
-- status it was given at; a retry clears the old claim so the executor can take it afresh.
UPDATE intents SET status = :status, decision_id = :decision_id, handoff = :handoff, claim_owner = NULL,
                   claimed_at = NULL, claim_prior = NULL, updated_at = :now
WHERE profile = :profile AND id = :id AND status = :expected
RETURNING *;

-- name: record_preview
-- A dry pass's preview: what a real run would do. The status (and updated_at, which the drift
-- guard's window reads) stays as it was; a row that moved on meanwhile is left alone.
UPDATE intents SET result = :result WHERE profile = :profile AND id = :id AND status = :expected;

-- name: sanctioned_retries
-- The retries a person sanctioned since :since, newest first, with the intent they hand back.
SELECT i.*, d.id AS retry_decision FROM decisions d
JOIN intents i ON i.profile = d.profile AND i.id = d.intent_id
WHERE d.profile = :profile AND d.kind = 'retry' AND d.decided_at >= :since
ORDER BY d.id DESC LIMIT :limit;

-- name: failed_actions
SELECT * FROM intents
WHERE profile = :profile AND updated_at >= :since
  AND status IN ('failed', 'needs_human', 'denied', 'blocked')
ORDER BY id DESC LIMIT :limit;

-- name: record_progress
INSERT INTO progress (profile, tick_kind, outcome, state_hash, intent_id, error, detail,
                      started_at, ended_at)
VALUES (:profile, :tick_kind, :outcome, :state_hash, :intent_id, :error, :detail,
        :started_at, :ended_at)
RETURNING *;

-- name: recent_progress
SELECT * FROM progress WHERE profile = :profile ORDER BY id DESC LIMIT :limit;

-- name: recent_progress_kind
SELECT * FROM progress WHERE profile = :profile AND tick_kind = :tick_kind ORDER BY id DESC LIMIT :limit;

-- name: progress_for_intent
-- The progress rows that name one intent, newest first, along progress_intent.
SELECT * FROM progress WHERE profile = :profile AND intent_id = :intent_id ORDER BY id DESC LIMIT :limit;

-- name: add_observation
INSERT INTO observations (profile, source, content_hash, tainted, payload, observed_at)
VALUES (:profile, :source, :content_hash, :tainted, :payload, :now)
ON CONFLICT (profile, content_hash) DO NOTHING
RETURNING *;

-- name: list_observations
-- Ordered along observations_time, so a window walks only its own rows: ordered by id, SQLite
-- walked every older observation of the profile to find that the window was empty.
SELECT * FROM observations WHERE profile = :profile AND observed_at >= :since
ORDER BY observed_at DESC, id DESC LIMIT :limit;

-- name: add_note
INSERT INTO notes (profile, text, source, tainted, created_at)
VALUES (:profile, :text, :source, :tainted, :now)
RETURNING id, profile, text, source, tainted, created_at;

-- name: add_critique
INSERT INTO critiques (profile, goal_version, text, failure_type, created_at)
VALUES (:profile, :goal_version, :text, :failure_type, :now)
RETURNING *;

-- name: prune_critiques
-- Self-critiques are ephemeral: keep only the newest `keep` per goal, never promote them.
DELETE FROM critiques
WHERE profile = :profile AND goal_version = :goal_version
  AND id NOT IN (SELECT id FROM critiques WHERE profile = :profile AND goal_version = :goal_version
                 ORDER BY id DESC LIMIT :keep);

-- name: recent_critiques
SELECT * FROM critiques WHERE profile = :profile AND goal_version = :goal_version
ORDER BY id DESC LIMIT :limit;

-- name: ensure_budget
INSERT INTO attention_budgets (profile, budget, day, used, last_at)
VALUES (:profile, :budget, '', 0, NULL)
ON CONFLICT (profile, budget) DO NOTHING;

-- name: spend_attention
-- ONE conditional statement tests the daily cap and the global minimum gap and spends the slot.
-- Concurrent spenders serialise on the budget row; each re-tests the WHERE against the winner's
-- write, so no stale snapshot can overspend.
UPDATE attention_budgets
SET used = CASE WHEN day = :day THEN used + 1 ELSE 1 END, day = :day, last_at = :now
WHERE profile = :profile AND budget = :budget
  AND (CASE WHEN day = :day THEN used ELSE 0 END) < :cap
  AND (last_at IS NULL OR last_at <= :gap_cutoff);

-- name: log_spend
INSERT INTO attention_spends (profile, budget, reason, spent_at)
VALUES (:profile, :budget, :reason, :now)
RETURNING *;

-- name: attention_spends
SELECT * FROM attention_spends WHERE profile = :profile AND spent_at >= :since ORDER BY id;

-- name: log_notification
INSERT INTO notifications (profile, channel, kind, subject, body, intent_id, sent_at)
VALUES (:profile, :channel, :kind, :subject, :body, :intent_id, :now)
RETURNING *;

-- name: list_notifications
SELECT * FROM notifications WHERE profile = :profile AND sent_at >= :since ORDER BY id DESC LIMIT :limit;

-- name: list_notifications_kind
-- One channel and kind of the log (the attention gate's records), newest first, along notifications_kind.
SELECT * FROM notifications
WHERE profile = :profile AND channel = :channel AND kind = :kind AND sent_at >= :since
ORDER BY id DESC LIMIT :limit;

-- name: notifications_for_intent
-- The log lines that name one intent, newest first, along notifications_intent.
SELECT * FROM notifications WHERE profile = :profile AND intent_id = :intent_id ORDER BY id DESC LIMIT :limit;

-- name: get_condition
SELECT * FROM monitor_conditions WHERE profile = :profile AND name = :name;

-- name: put_condition
INSERT INTO monitor_conditions (profile, name, active, since, last_notified_at, updated_at)
VALUES (:profile, :name, :active, :since, :last_notified_at, :now)
ON CONFLICT (profile, name) DO UPDATE
SET active = excluded.active, since = excluded.since,
    last_notified_at = excluded.last_notified_at, updated_at = excluded.updated_at
RETURNING *;

-- name: record_monitor_pass
INSERT INTO monitor_passes (scope, ran_at) VALUES (:scope, :now)
ON CONFLICT (scope) DO UPDATE SET ran_at = excluded.ran_at;

-- name: last_monitor_pass
-- A pass over every profile (scope '') or over this one: the newer of the two rows.
SELECT MAX(ran_at) AS ran_at FROM monitor_passes WHERE scope = '' OR scope = :profile;

-- name: add_state_of_play
INSERT INTO states_of_play (profile, text, created_at) VALUES (:profile, :text, :now) RETURNING *;

-- name: latest_state_of_play
SELECT * FROM states_of_play WHERE profile = :profile ORDER BY id DESC LIMIT 1;

-- name: release_stale_claims
-- A claim never moved to `sending` before the cutoff: its claimer died before any side effect began,
-- so the intent goes back to its prior status (ready/approved) for the next executor. The guard is in
-- the WHERE: a live claimer's own mark_sending requires `claimed` too, so exactly one of the two wins.
UPDATE intents SET status = claim_prior, claim_owner = NULL, claimed_at = NULL, claim_prior = NULL,
                   updated_at = :now
WHERE profile = :profile AND status = 'claimed' AND claimed_at < :cutoff
RETURNING id;

-- name: set_task_priority
UPDATE tasks SET priority = :priority, updated_at = :now
WHERE profile = :profile AND id = :id
RETURNING *;

-- Retention (the nightly consolidation). Each DELETE keeps its floors in its own WHERE: the
-- `keep` newest rows of the kind, and any row that references an open intent.

-- name: prune_progress
DELETE FROM progress
WHERE profile = :profile AND started_at < :before
  AND id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY tick_kind ORDER BY id DESC) AS rn
                                 FROM progress WHERE profile = :profile) AS ranked
                 WHERE rn <= :keep)
  AND (intent_id IS NULL
       OR intent_id NOT IN (SELECT id FROM intents WHERE profile = :profile AND status IN
           ('proposed', 'allowed', 'requires_approval', 'ready', 'approved', 'claimed', 'sending')));

-- name: prune_observations
DELETE FROM observations
WHERE profile = :profile AND observed_at < :before
  AND id NOT IN (SELECT id FROM (SELECT id FROM observations WHERE profile = :profile
                                 ORDER BY id DESC LIMIT :keep) AS newest);

-- name: prune_notifications
DELETE FROM notifications
WHERE profile = :profile AND sent_at < :before
  AND id NOT IN (SELECT id FROM (SELECT id FROM notifications WHERE profile = :profile
                                 ORDER BY id DESC LIMIT :keep) AS newest)
  AND (intent_id IS NULL
       OR intent_id NOT IN (SELECT id FROM intents WHERE profile = :profile AND status IN
           ('proposed', 'allowed', 'requires_approval', 'ready', 'approved', 'claimed', 'sending')));

-- name: prune_states_of_play
DELETE FROM states_of_play
WHERE profile = :profile AND created_at < :before
  AND id NOT IN (SELECT id FROM (SELECT id FROM states_of_play WHERE profile = :profile
                                 ORDER BY id DESC LIMIT :keep) AS newest);

-- The dashboard's reads: true counts, and lists that page through every row.

-- name: count_intents
SELECT COUNT(*) AS n FROM intents WHERE profile = :profile;

-- name: count_intents_by_status
-- Along intents_status: the count reads the index, not the rows.
-- Also the newest id at that status: the live-refresh fingerprint moves when the set does.
SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS newest FROM intents WHERE profile = :profile AND status = :status;

-- name: intents_oldest_by_status
-- The approvals page: oldest first, a page after the last id shown (keyset paging reaches every row).
SELECT * FROM intents WHERE profile = :profile AND status = :status AND id > :after
ORDER BY id LIMIT :limit;

-- name: search_intents
-- The intents page: newest first before an id (keyset), by type and up to three title words
-- (lowercase LIKE patterns, '%' for none). Walks intents_recent and stops at the limit: ordered by
-- profile too, so the primary key (which walks every profile's rows) cannot give the order.
SELECT * FROM intents
WHERE profile = :profile AND id < :before
  AND (:action_type = '' OR action_type = :action_type)
  AND lower(title) LIKE :p1 ESCAPE '\' AND lower(title) LIKE :p2 ESCAPE '\' AND lower(title) LIKE :p3 ESCAPE '\'
ORDER BY profile DESC, id DESC LIMIT :limit;

-- name: search_intents_by_status
-- The same at one status, along intents_status.
SELECT * FROM intents
WHERE profile = :profile AND status = :status AND id < :before
  AND (:action_type = '' OR action_type = :action_type)
  AND lower(title) LIKE :p1 ESCAPE '\' AND lower(title) LIKE :p2 ESCAPE '\' AND lower(title) LIKE :p3 ESCAPE '\'
ORDER BY id DESC LIMIT :limit;

-- name: progress_by_outcome
-- The timeline's rows of one outcome, newest first, along progress_outcome.
SELECT * FROM progress WHERE profile = :profile AND outcome = :outcome ORDER BY id DESC LIMIT :limit;

-- name: progress_by_kind_outcome
-- The timeline's rows of one kind and outcome, newest first, along progress_kind_outcome.
SELECT * FROM progress WHERE profile = :profile AND tick_kind = :tick_kind AND outcome = :outcome
ORDER BY id DESC LIMIT :limit;
