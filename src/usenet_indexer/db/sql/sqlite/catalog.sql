-- The catalog, SQLite (writers are serialized already).

-- name: batch_lock_group
SELECT :group_id AS locked

-- name: batch_lock_stripe
SELECT :stripe AS locked

-- name: releases_by_keys
SELECT * FROM releases WHERE key IN (SELECT value FROM json_each(:keys))

-- name: probe_take
-- :skip the probes this round already ran: one that failed is queued again, but not retried at once.
UPDATE probe_queue SET status = 'working', attempts = attempts + 1, updated_at = {now}
WHERE release_key IN (
  SELECT release_key FROM probe_queue
  WHERE (status = 'queued' OR (status = 'working' AND updated_at < {now} - :stale))
    AND release_key NOT IN (SELECT value FROM json_each(:skip))
  ORDER BY priority, created_at LIMIT :n)
RETURNING release_key, par2_message_id, nfo_message_id, archive_message_id, attempts

-- name: dashboard_group_releases
-- Releases found per group: new ones counted by the batches that stored them (a release cross-posted
-- to several groups counts where it was first stored). From the batch log: one row per batch.
SELECT r.group_id, COALESCE(SUM(json_extract(b.result, '$.new')), 0) AS releases
FROM batch_log b JOIN ranges r ON r.id = b.range_id
GROUP BY r.group_id

-- name: release_aliases_by_keys
SELECT member_key, release_key FROM release_aliases WHERE member_key IN (SELECT value FROM json_each(:keys))

-- name: releases_search_mark
-- The last release id before an insert of releases: releases_search_index indexes the ones after it
-- (writers are serialized, so those are the transaction's own).
SELECT COALESCE(max(id), 0) AS id FROM releases

-- name: releases_search_index
-- The full-text index of the releases inserted after :after, in one statement: a trigger per row cost
-- 17 µs a release, half of its insert (migration 0012, issue 17; catalog/batch_store.py insert_releases).
INSERT INTO releases_fts (rowid, search_name) SELECT id, search_name FROM releases WHERE id > :after

-- name: runs_by_keys
SELECT * FROM loose_runs WHERE key IN (SELECT value FROM json_each(:keys))
