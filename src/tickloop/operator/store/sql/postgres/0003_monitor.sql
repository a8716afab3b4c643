-- The stall monitor counts intents waiting on the person for every profile at once.
CREATE INDEX intents_waiting ON intents(profile) WHERE status = 'requires_approval';
