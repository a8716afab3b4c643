-- The dashboard counts a profile's intents by status and pages through them oldest first
-- (status = ? AND id > ? ORDER BY id): both walk this index, never every intent of the profile.
CREATE INDEX intents_status ON intents(profile, status, id);
