-- Full-text search over memory notes: an FTS5 index kept in step with `notes` by triggers, and
-- back-filled so notes written under the first schema are searchable after the upgrade.
-- remove_diacritics 0: 'café' and 'cafe' stay different words, as on PostgreSQL and in memory.
CREATE VIRTUAL TABLE notes_fts USING fts5(
    text, content='notes', content_rowid='id', tokenize='unicode61 remove_diacritics 0'
);

CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts(rowid, text) VALUES (new.id, new.text);
END;

CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts(notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;

CREATE TRIGGER notes_fts_update AFTER UPDATE ON notes BEGIN
    INSERT INTO notes_fts(notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO notes_fts(rowid, text) VALUES (new.id, new.text);
END;

INSERT INTO notes_fts(notes_fts) VALUES ('rebuild');
