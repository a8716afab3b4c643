-- The stall monitor's last pass, so the dashboard can tell "never ran" from "ran and found nothing"
-- (a clean pass writes no condition). scope '' is a pass over every profile, else one profile's name.
CREATE TABLE monitor_passes (
    scope TEXT PRIMARY KEY,
    ran_at TIMESTAMPTZ NOT NULL
);
