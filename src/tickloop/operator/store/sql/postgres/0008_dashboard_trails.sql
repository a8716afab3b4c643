-- The intent page lists the log lines and progress rows that name one intent, newest first: each walks
-- an index of its own (only rows that name an intent are in it), not the newest rows of the log.
CREATE INDEX notifications_intent ON notifications(profile, intent_id, id) WHERE intent_id IS NOT NULL;
CREATE INDEX progress_intent ON progress(profile, intent_id, id) WHERE intent_id IS NOT NULL;
-- The attention page (and the gate, the digest and the candidates) read one channel and kind of the
-- log, newest first, along this index: never every notification.
CREATE INDEX notifications_kind ON notifications(profile, channel, kind, id);
