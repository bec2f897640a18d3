-- Range leases, PostgreSQL.

-- name: lease_take
-- The grant is a function (migration 0002) so that the group cap is counted with the group locked.
SELECT * FROM lease_take(:node_id, :ttl, :max_per_group, :history_allowed)

-- name: range_heartbeat
WITH beat AS (
  UPDATE ranges SET heartbeat_at = {now}
  WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
    AND heartbeat_at >= {now} - :ttl
  RETURNING id
),
seen AS (
  UPDATE nodes SET last_seen_at = {now}
  WHERE id = :node_id AND EXISTS (SELECT 1 FROM beat) AND (last_seen_at IS NULL OR last_seen_at < {now} - 5)
)
SELECT id FROM beat

-- name: range_for_update
SELECT r.*, g.name AS group_name, {now} AS now FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.id = :range_id FOR UPDATE OF r

-- name: group_for_update
SELECT * FROM groups WHERE id = :group_id FOR UPDATE

-- name: plain_chunk_report
INSERT INTO plain_chunks (range_id, chunk_from, reports) VALUES (:range_id, :chunk_from, 1)
ON CONFLICT (range_id, chunk_from) DO UPDATE SET reports = plain_chunks.reports + 1
RETURNING reports, fetched_plain_at

-- name: database_size
SELECT pg_database_size(current_database()) AS bytes
