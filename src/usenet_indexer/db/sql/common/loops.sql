-- The coordinator's news loops: planner, prefetcher, corpus fill, spool clean-up (coordinator/*.py).

-- name: planner_groups
SELECT * FROM groups WHERE enabled ORDER BY name

-- name: group_set_error
UPDATE groups SET error = :error WHERE id = :group_id

-- name: group_set_watermarks
UPDATE groups SET low_water = :low, high_water = :high, error = :error WHERE id = :group_id

-- name: group_set_backfill_article
UPDATE groups SET backfill_article = :article WHERE id = :group_id

-- name: group_set_backfill
-- A new backfill target: the date's article is searched again at the next planning.
UPDATE groups
SET backfill_articles = :backfill_articles, backfill_days = :backfill_days,
    backfill_since = :backfill_since, backfill_article = NULL
WHERE name = :name
RETURNING id

-- name: ranges_retire
-- Planned ranges wholly below the low watermark: the server no longer has their articles (see
-- planner.py for why "failed" and not "done"). Ranges with chunks spooled or stored keep them.
UPDATE ranges SET status = 'failed', error = :reason
WHERE group_id = :group_id AND status = 'planned' AND end_id < :low
  AND spooled_chunks = 0 AND stored_at IS NULL
RETURNING id

-- name: prefetch_targets
-- Leased ranges first (a worker is waiting for them), then planned ones in lease order: spooled first,
-- by priority, then id (leases/ranges.py). Ranges complete in the corpus need nothing fetched.
SELECT r.id, r.group_id, g.name AS group_name, r.start_id, r.end_id, r.next_id, r.status, r.priority,
       r.capture, r.spooled_chunks
FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.status IN ('planned', 'leased') AND r.next_id <= r.end_id AND r.stored_at IS NULL
  AND g.enabled AND (r.status = 'leased' OR :history_allowed OR r.priority < 0)
ORDER BY (r.status <> 'leased'), (r.spooled_chunks = 0), r.priority, r.id
LIMIT :limit

-- name: range_set_spooled
UPDATE ranges SET spooled_chunks = :spooled WHERE id = :range_id

-- name: range_chunk_spooled
UPDATE ranges SET spooled_chunks = spooled_chunks + 1 WHERE id = :range_id

-- name: fetched_chunk_insert
INSERT INTO fetched_chunks (range_id, chunk_from, chunk_to, lines, gaps, bytes, encoding, fetched_at)
VALUES (:range_id, :chunk_from, :chunk_to, :lines, :gaps, :bytes, :encoding, {now})
ON CONFLICT (range_id, chunk_from) DO NOTHING
RETURNING range_id

-- name: range_add_gaps
UPDATE ranges SET gaps = gaps + :gaps WHERE id = :range_id

-- name: corpus_fill_targets
SELECT r.id, r.group_id, g.name AS group_name, r.start_id, r.end_id, r.next_id, r.status
FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.capture AND r.stored_at IS NULL AND r.status <> 'failed'
ORDER BY r.id
LIMIT :limit

-- name: range_stored
UPDATE ranges SET stored_at = {now} WHERE id = :range_id AND stored_at IS NULL

-- name: range_spool_state
SELECT id, status, start_id, end_id, next_id, capture FROM ranges WHERE id = :range_id

-- name: ranges_reindex
-- A group's ranges kept whole in the corpus, back to planned from their start: indexed again (with the
-- rule version of the new lease) from the corpus, without the news server. Leased ones are left alone.
UPDATE ranges
SET status = 'planned', next_id = start_id, priority = :priority, node_id = NULL, error = NULL,
    done_at = NULL, headers = 0
WHERE group_id = :group_id AND stored_at IS NOT NULL AND status <> 'leased'
RETURNING id, start_id, end_id

-- name: batch_log_forget
-- A range indexed again starts a new pass at its start: the old pass's batches would overlap the new
-- one's (the audit and retries look at one pass; the old one was complete).
DELETE FROM batch_log WHERE range_id = :range_id
