-- The fast tick reads a profile's newest observations in a window, ORDER BY observed_at DESC, id DESC
-- LIMIT n. With id in the index the scan is already in that order and stops after n rows; without it
-- PostgreSQL sorted every observation of the window first.
CREATE INDEX observations_recent ON observations(profile, observed_at, id);
DROP INDEX observations_time;
