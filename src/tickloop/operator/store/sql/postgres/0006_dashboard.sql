-- The dashboard counts a profile's intents by status and pages through them oldest first
-- (status = ? AND id > ? ORDER BY id): both walk this index, never every intent of the profile.
CREATE INDEX intents_status ON intents(profile, status, id);
-- The timeline filters every progress row by outcome, and by kind and outcome, newest first.
CREATE INDEX progress_outcome ON progress(profile, outcome, id);
CREATE INDEX progress_kind_outcome ON progress(profile, tick_kind, outcome, id);
