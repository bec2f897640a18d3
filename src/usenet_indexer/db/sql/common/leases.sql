-- Range leases: the statements both dialects run as written.

-- name: lease_grant
UPDATE ranges
SET status = 'leased', node_id = :node_id, epoch = epoch + 1, attempts = attempts + 1,
    leased_at = {now}, heartbeat_at = {now},
    rule_version = (SELECT COALESCE(MAX(version), 0) FROM rule_sets)
WHERE id = :range_id
RETURNING id AS range_id, group_id, start_id, end_id, next_id, epoch, priority, rule_version,
          leased_at AS granted_at

-- name: group_name
SELECT name FROM groups WHERE id = :group_id

-- name: node_seen
UPDATE nodes SET last_seen_at = {now}
WHERE id = :node_id AND (last_seen_at IS NULL OR last_seen_at < {now} - 5)

-- name: lease_log_grant
INSERT INTO lease_log (range_id, group_id, epoch, node_id, granted_at, took_over)
VALUES (:range_id, :group_id, :epoch, :node_id, :granted_at, :took_over)

-- name: lease_log_end
UPDATE lease_log SET ended_at = :ended_at, end_reason = :reason
WHERE range_id = :range_id AND epoch = :epoch AND ended_at IS NULL

-- name: range_get
SELECT r.*, {now} AS now FROM ranges r WHERE r.id = :range_id

-- name: range_with_group
SELECT r.*, g.name AS group_name, {now} AS now FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.id = :range_id

-- name: range_done
UPDATE ranges SET status = 'done', done_at = {now}, heartbeat_at = {now}, node_id = NULL
WHERE id = :range_id
RETURNING done_at

-- name: range_release
UPDATE ranges SET status = 'planned', node_id = NULL WHERE id = :range_id RETURNING {now} AS now

-- name: range_fail
UPDATE ranges SET status = 'failed', node_id = NULL, error = :error WHERE id = :range_id
RETURNING {now} AS now

-- name: range_uncapture
UPDATE ranges SET stored_at = NULL WHERE id = :range_id

-- name: ranges_abandoned
SELECT id, epoch, heartbeat_at, group_id, priority, headers FROM ranges
WHERE status = 'leased' AND next_id > end_id AND heartbeat_at < {now} - :ttl

-- name: range_finish_abandoned
UPDATE ranges SET status = 'done', done_at = {now}, node_id = NULL
WHERE id = :range_id AND epoch = :epoch AND status = 'leased' AND next_id > end_id
  AND heartbeat_at < {now} - :ttl
RETURNING id

-- name: range_advance
UPDATE ranges SET next_id = :next_id, headers = headers + :headers, heartbeat_at = {now}
WHERE id = :range_id AND epoch = :epoch
RETURNING heartbeat_at AS stored_at

-- name: batch_log_insert
INSERT INTO batch_log (range_id, epoch, node_id, from_id, to_id, headers, result, stored_at)
VALUES (:range_id, :epoch, :node_id, :from_id, :to_id, :headers, :result, :stored_at)

-- name: batch_log_last
SELECT * FROM batch_log WHERE range_id = :range_id AND epoch = :epoch AND from_id = :from_id AND to_id = :to_id

-- name: plain_chunk_get
SELECT reports, fetched_plain_at FROM plain_chunks WHERE range_id = :range_id AND chunk_from = :chunk_from

-- name: plain_chunk_fetched
UPDATE plain_chunks SET fetched_plain_at = {now} WHERE range_id = :range_id AND chunk_from = :chunk_from

-- name: plain_chunks_of
SELECT chunk_from, reports, fetched_plain_at FROM plain_chunks WHERE range_id = :range_id ORDER BY chunk_from

-- name: group_count_headers_history
UPDATE groups SET headers_history = headers_history + :headers WHERE id = :group_id

-- name: group_count_headers_tail
UPDATE groups SET headers_tail = headers_tail + :headers WHERE id = :group_id

-- name: database_now
SELECT {now} AS now
