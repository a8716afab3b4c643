-- Full-text search over memory notes: a generated tsvector with a GIN index. Punctuation is turned
-- into spaces and the 'simple' configuration lowercases without stemming, so a word matches here
-- exactly when it matches FTS5's default tokenizer on SQLite.
ALTER TABLE notes ADD COLUMN tsv tsvector GENERATED ALWAYS AS
    (to_tsvector('simple', regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))) STORED;
CREATE INDEX notes_tsv ON notes USING gin (tsv);
