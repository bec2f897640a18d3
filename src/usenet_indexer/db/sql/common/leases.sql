-- Range leases: the statements both dialects run as written.

-- name: lease_grant
-- Conditional on the state the pick saw (epoch, status, still to read, free or lapsed): a retire, a
-- corrupt report's fail or a late batch that committed between the pick and this grant is never
-- overwritten (issue 14: a retired range back to 'leased'). No row: nothing granted.
UPDATE ranges
SET status = 'leased', node_id = :node_id, epoch = epoch + 1, attempts = attempts + 1,
    leased_at = {now}, heartbeat_at = {now}, lane_epoch = :lane_epoch, claim = :claim,
    rule_version = (SELECT COALESCE(MAX(version), 0) FROM rule_sets)
WHERE id = :range_id AND epoch = :prev_epoch AND status = :prev_status AND next_id <= end_id
  AND (status = 'planned' OR (status = 'leased' AND heartbeat_at < {now} - :ttl))
RETURNING id AS range_id, group_id, start_id, end_id, next_id, epoch, priority, rule_version,
          leased_at AS granted_at

-- name: group_name
SELECT name FROM groups WHERE id = :group_id

-- name: node_seen
UPDATE nodes SET last_seen_at = {now}
WHERE id = :node_id AND (last_seen_at IS NULL OR last_seen_at < {now} - 5)

-- name: lease_log_grant
INSERT INTO lease_log (range_id, group_id, epoch, node_id, granted_at, took_over, lane_epoch, claim)
VALUES (:range_id, :group_id, :epoch, :node_id, :granted_at, :took_over, :lane_epoch, :claim)

-- name: lease_log_end
UPDATE lease_log SET ended_at = :ended_at, end_reason = :reason
WHERE range_id = :range_id AND epoch = :epoch AND ended_at IS NULL

-- name: range_get
SELECT r.*, {now} AS now FROM ranges r WHERE r.id = :range_id

-- name: node_range_leases
-- A node's live range leases: what the supervisor of a worker that died gives back when the node was
-- the worker's alone (`run`), including a grant the worker had not read yet (issue 17).
SELECT id, epoch FROM ranges WHERE node_id = :node_id AND status = 'leased' AND heartbeat_at >= {now} - :ttl

-- name: range_with_group
SELECT r.*, g.name AS group_name, g.history_low AS group_low, g.tail_next AS group_next, {now} AS now
FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.id = :range_id

-- name: range_replan
-- A corrupt report: the range back to planned (its chunk fetched plain next time), by its holder only.
UPDATE ranges SET status = 'planned', node_id = NULL, lane_epoch = NULL
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND heartbeat_at >= {now} - :ttl
RETURNING {now} AS now

-- name: range_fail
-- A corrupt report on a chunk already fetched plain: the range fails, by its holder only.
UPDATE ranges SET status = 'failed', node_id = NULL, lane_epoch = NULL, error = :error
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND heartbeat_at >= {now} - :ttl
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
-- A batch's write, conditional on everything it was decided on, the TTL at this statement's clock
-- included: the batch read its range (and locked it) before waiting on its group's merge lock, and a
-- lease that lapsed meanwhile was stored and revived beside a grant that had counted it dead (issue 14).
UPDATE ranges SET next_id = :next_id, headers = headers + :headers, heartbeat_at = {now}
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND next_id = :from_id AND :next_id <= end_id + 1 AND heartbeat_at >= {now} - :ttl
RETURNING heartbeat_at AS stored_at

-- name: batch_log_insert
-- lease_expires_at: the lease's expiry as the write found it (last heartbeat + TTL); the audit checks
-- that the write's own time is within it.
INSERT INTO batch_log (range_id, epoch, node_id, from_id, to_id, headers, result, stored_at, lease_expires_at)
VALUES (:range_id, :epoch, :node_id, :from_id, :to_id, :headers, :result, :stored_at, :lease_expires_at)

-- name: batch_log_last
SELECT * FROM batch_log WHERE range_id = :range_id AND epoch = :epoch AND from_id = :from_id AND to_id = :to_id

-- name: plain_chunk_get
SELECT reports, fetched_plain_at, plain_crc FROM plain_chunks
WHERE range_id = :range_id AND chunk_from = :chunk_from

-- name: plain_chunk_fetched
-- plain_crc: the CRC-32 of the copy stored, which a later corrupt report is matched against.
UPDATE plain_chunks SET fetched_plain_at = {now}, plain_crc = :plain_crc
WHERE range_id = :range_id AND chunk_from = :chunk_from

-- name: plain_chunks_of
SELECT chunk_from, reports, fetched_plain_at FROM plain_chunks WHERE range_id = :range_id ORDER BY chunk_from

-- name: group_count_headers_history
UPDATE groups SET headers_history = headers_history + :headers WHERE id = :group_id

-- name: group_count_headers_tail
UPDATE groups SET headers_tail = headers_tail + :headers WHERE id = :group_id

-- name: database_now
SELECT {now} AS now
