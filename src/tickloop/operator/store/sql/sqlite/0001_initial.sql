-- The operator's first schema. Times are ISO 8601 UTC text with milliseconds and a Z, which sort
-- lexically in time order; JSON is text. Every row belongs to one profile.
CREATE TABLE profiles (
    name TEXT PRIMARY KEY,
    display_name TEXT NOT NULL,
    timezone TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE goal_models (
    profile TEXT NOT NULL REFERENCES profiles(name),
    version INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'retired')),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL,
    activated_at TEXT,
    PRIMARY KEY (profile, version)
);
-- At most one active goal model per profile, enforced by the database itself.
CREATE UNIQUE INDEX goal_models_one_active ON goal_models(profile) WHERE status = 'active';

CREATE TABLE tasks (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    title TEXT NOT NULL,
    priority INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('todo', 'doing', 'blocked', 'done')),
    notes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- Lets a plan step require a task of its own profile (a composite foreign key).
    UNIQUE (id, profile)
);
CREATE INDEX tasks_profile ON tasks(profile, status);

CREATE TABLE plan_steps (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL,
    goal_version INTEGER NOT NULL,
    position INTEGER NOT NULL,
    title TEXT NOT NULL,
    task_id INTEGER,
    status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'blocked', 'skipped')),
    updated_at TEXT NOT NULL,
    FOREIGN KEY (profile, goal_version) REFERENCES goal_models(profile, version),
    FOREIGN KEY (task_id, profile) REFERENCES tasks(id, profile)
);
CREATE INDEX plan_steps_goal ON plan_steps(profile, goal_version, status, position);

CREATE TABLE intents (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    action_type TEXT NOT NULL,
    title TEXT NOT NULL,
    recipient TEXT NOT NULL,
    payload TEXT NOT NULL,
    tier TEXT NOT NULL CHECK (tier IN ('reversible', 'external', 'spend')),
    status TEXT NOT NULL,
    verdict TEXT,
    verdict_reasons TEXT NOT NULL,
    decision_id INTEGER,
    claim_owner TEXT,
    claimed_at TEXT,
    claim_prior TEXT,
    dry_run INTEGER NOT NULL,
    result TEXT,
    handoff INTEGER NOT NULL,
    origin_tick TEXT NOT NULL,
    origin_tainted INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- Lets decisions and progress rows require an intent of their own profile.
    UNIQUE (id, profile)
);
-- Every status change pays for each index entry it moves, so the indexes that name a status are
-- partial: completing a claim (the executor's hot path) touches no index at all.
-- Listings walk a profile's intents newest first.
CREATE INDEX intents_recent ON intents(profile, id);
-- Claims read only what is claimable.
CREATE INDEX intents_claimable ON intents(profile, id) WHERE status IN ('ready', 'approved');
-- The drift guard's tried-and-failed list.
CREATE INDEX intents_failed ON intents(profile, id) WHERE status IN ('failed', 'needs_human', 'denied', 'blocked');
-- The reaper scans in-flight claims, across profiles or for one.
CREATE INDEX intents_inflight ON intents(claimed_at) WHERE status = 'sending';
CREATE INDEX intents_inflight_profile ON intents(profile, claimed_at) WHERE status = 'sending';

CREATE TABLE decisions (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    intent_id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('approve', 'deny')),
    by_whom TEXT NOT NULL,
    note TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    FOREIGN KEY (intent_id, profile) REFERENCES intents(id, profile)
);

CREATE TABLE progress (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    tick_kind TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN
        ('done', 'staged', 'noop', 'refused', 'gate_stop', 'blocked', 'failed', 'interrupted')),
    state_hash TEXT NOT NULL,
    intent_id INTEGER,
    error TEXT NOT NULL,
    detail TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    FOREIGN KEY (intent_id, profile) REFERENCES intents(id, profile)
);
-- Ticks read the newest rows; these keep that independent of the history's length.
CREATE INDEX progress_recent ON progress(profile, id);
CREATE INDEX progress_kind ON progress(profile, tick_kind, id);

CREATE TABLE observations (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    source TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    tainted INTEGER NOT NULL,
    payload TEXT NOT NULL,
    observed_at TEXT NOT NULL,
    UNIQUE (profile, content_hash)
);
CREATE INDEX observations_time ON observations(profile, observed_at);

CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    tainted INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX notes_profile ON notes(profile, id);

CREATE TABLE critiques (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    goal_version INTEGER NOT NULL,
    text TEXT NOT NULL,
    failure_type TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX critiques_goal ON critiques(profile, goal_version, id);

-- One row per (profile, budget): the single conditional UPDATE on it is what makes a spend atomic.
CREATE TABLE attention_budgets (
    profile TEXT NOT NULL REFERENCES profiles(name),
    budget TEXT NOT NULL,
    day TEXT NOT NULL,
    used INTEGER NOT NULL,
    last_at TEXT,
    PRIMARY KEY (profile, budget)
);

CREATE TABLE attention_spends (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    budget TEXT NOT NULL,
    reason TEXT NOT NULL,
    spent_at TEXT NOT NULL
);
CREATE INDEX attention_spends_time ON attention_spends(profile, spent_at);

CREATE TABLE notifications (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    channel TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    intent_id INTEGER,
    sent_at TEXT NOT NULL
);
CREATE INDEX notifications_time ON notifications(profile, sent_at);

CREATE TABLE monitor_conditions (
    profile TEXT NOT NULL REFERENCES profiles(name),
    name TEXT NOT NULL,
    active INTEGER NOT NULL,
    since TEXT,
    last_notified_at TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (profile, name)
);

CREATE TABLE states_of_play (
    id INTEGER PRIMARY KEY,
    profile TEXT NOT NULL REFERENCES profiles(name),
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX states_of_play_recent ON states_of_play(profile, id);

-- SQLite has no advisory locks: a lease row per (profile, tick kind) stands in for one.
CREATE TABLE tick_locks (
    profile TEXT NOT NULL,
    tick_kind TEXT NOT NULL,
    owner TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    PRIMARY KEY (profile, tick_kind)
);
