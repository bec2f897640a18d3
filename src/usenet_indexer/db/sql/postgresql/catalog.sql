-- The catalog, PostgreSQL.

-- name: batch_lock_group
-- A group's batches merge one at a time: two batches holding fragments of a release that does not
-- exist yet would both insert it. Seed 000 caps live leases per group for this reason.
SELECT pg_advisory_xact_lock(1969, CAST(:group_id AS integer))

-- name: batch_lock_stripe
-- Batches whose releases may be the same merge one at a time: a cross-post is one release (issue 16),
-- so a batch takes this lock for the stripe of every group its fragments name (catalog/batch_store.py;
-- in stripe order: never a deadlock). Without it two groups' batches holding a release not stored yet
-- would both insert it (a unique violation).
SELECT pg_advisory_xact_lock(1970, CAST(:stripe AS integer))

-- name: releases_by_keys
SELECT * FROM releases WHERE key = ANY(CAST(:keys AS text[])) FOR UPDATE

-- name: probe_take
-- :skip the probes this round already ran: one that failed is queued again, but not retried at once.
UPDATE probe_queue SET status = 'working', attempts = attempts + 1, updated_at = {now}
WHERE release_key IN (
  SELECT release_key FROM probe_queue
  WHERE (status = 'queued' OR (status = 'working' AND updated_at < {now} - :stale))
    AND release_key <> ALL(CAST(:skip AS text[]))
  ORDER BY priority, created_at LIMIT :n
  FOR UPDATE SKIP LOCKED)
RETURNING release_key, par2_message_id, nfo_message_id, archive_message_id, attempts

-- name: dashboard_group_releases
-- Releases found per group: new ones counted by the batches that stored them (a release cross-posted
-- to several groups counts where it was first stored). From the batch log: one row per batch.
SELECT r.group_id, COALESCE(SUM((b.result::json ->> 'new')::bigint), 0) AS releases
FROM batch_log b JOIN ranges r ON r.id = b.range_id
GROUP BY r.group_id

-- name: release_aliases_by_keys
SELECT member_key, release_key FROM release_aliases WHERE member_key = ANY(CAST(:keys AS text[]))

-- name: releases_search_mark
-- Nothing to mark: the full-text vector is a generated column (SQLite indexes after inserting).
SELECT 0 AS id

-- name: releases_search_index
SELECT CAST(:after AS bigint) AS indexed

-- name: runs_by_keys
SELECT * FROM loose_runs WHERE key = ANY(CAST(:keys AS text[])) FOR UPDATE
