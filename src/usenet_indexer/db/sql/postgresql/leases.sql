-- Range leases, PostgreSQL.

-- name: lease_take
-- The grant is a function (migration 0002) so that the group cap is counted with the group locked.
SELECT * FROM lease_take(:node_id, :ttl, :max_per_group, :history_allowed)

-- name: range_heartbeat
-- A function (migration 0006), so that its plan is cached: a heartbeat is the most frequent call.
SELECT range_id FROM range_heartbeat(:range_id, :node_id, :epoch, :ttl)

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

-- name: range_finish
-- The holder finishes its range: done, its lease logged as ended, its headers counted per lane, in
-- one statement (one round trip). No row: not held, or not past its end (the caller asks why).
WITH done AS (
  UPDATE ranges SET status = 'done', done_at = {now}, heartbeat_at = {now}, node_id = NULL
  WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
    AND heartbeat_at >= {now} - :ttl AND next_id > end_id
  RETURNING id, group_id, priority, headers, done_at
),
logged AS (
  UPDATE lease_log l SET ended_at = done.done_at, end_reason = 'finished' FROM done
  WHERE l.range_id = done.id AND l.epoch = :epoch AND l.ended_at IS NULL
),
counted AS (
  UPDATE groups g
  SET headers_history = g.headers_history + CASE WHEN done.priority >= 0 THEN done.headers ELSE 0 END,
      headers_tail = g.headers_tail + CASE WHEN done.priority < 0 THEN done.headers ELSE 0 END
  FROM done WHERE g.id = done.group_id
),
lane AS (
  UPDATE group_leases gl SET headers = gl.headers + done.headers FROM done
  WHERE gl.group_id = done.group_id AND gl.lane = CASE WHEN done.priority < 0 THEN 'tail' ELSE 'history' END
)
SELECT id, group_id, priority, headers FROM done

-- name: range_give_back
-- The holder releases its range: planned again, its lease logged as ended, in one statement.
WITH released AS (
  UPDATE ranges SET status = 'planned', node_id = NULL
  WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
    AND heartbeat_at >= {now} - :ttl
  RETURNING id, {now} AS now
),
logged AS (
  UPDATE lease_log l SET ended_at = released.now, end_reason = 'released' FROM released
  WHERE l.range_id = released.id AND l.epoch = :epoch AND l.ended_at IS NULL
)
SELECT id FROM released
