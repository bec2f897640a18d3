-- Range leases, PostgreSQL. The grant is one statement, run at REPEATABLE READ: see leases/ranges.py.

-- name: lease_take
-- Each group's best candidate per lane (one index descent each, see ranges_lease_pick), then the best of
-- those: spooled first, by priority, then id. The group row is locked (SKIP LOCKED: a group another
-- grant is busy with is passed over, not waited for) and bumped, which is what keeps the group cap
-- exact: a grant whose snapshot missed a concurrent grant in the same group fails to lock that bumped
-- row at REPEATABLE READ and is retried, instead of counting a stale number of live leases.
WITH clock AS (SELECT {now} AS now),
live AS (
  SELECT group_id, count(*) AS n FROM ranges, clock
  WHERE status = 'leased' AND heartbeat_at >= clock.now - :ttl
  GROUP BY group_id
),
held_lanes AS (
  SELECT group_id, lane FROM group_leases, clock
  WHERE node_id IS NOT NULL AND heartbeat_at >= clock.now - :ttl
),
pick AS (
  SELECT g.id AS group_id, c.id AS range_id, c.epoch AS prev_epoch, c.status AS prev_status,
         c.heartbeat_at AS prev_heartbeat
  FROM groups g
  CROSS JOIN (VALUES (false), (true)) AS lanes(history)
  CROSS JOIN clock
  CROSS JOIN LATERAL (
    SELECT r.id, r.epoch, r.status, r.heartbeat_at, r.spooled_chunks, r.priority
    FROM ranges r
    WHERE r.group_id = g.id AND (r.priority >= 0) = lanes.history
      AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
      AND (r.status = 'planned' OR r.heartbeat_at < clock.now - :ttl)
    ORDER BY (r.spooled_chunks = 0), r.priority, r.id
    LIMIT 1
  ) c
  WHERE g.enabled
    AND (:history_allowed OR NOT lanes.history)
    AND NOT EXISTS (
      SELECT 1 FROM held_lanes h
      WHERE h.group_id = g.id AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
    AND COALESCE((SELECT n FROM live WHERE live.group_id = g.id), 0) < :max_per_group
  ORDER BY (c.spooled_chunks = 0), c.priority, c.id
  LIMIT 1
  FOR UPDATE OF g SKIP LOCKED
),
granted AS (
  UPDATE ranges r
  SET status = 'leased', node_id = :node_id, epoch = r.epoch + 1, attempts = r.attempts + 1,
      leased_at = clock.now, heartbeat_at = clock.now,
      rule_version = (SELECT COALESCE(MAX(version), 0) FROM rule_sets)
  FROM pick, clock
  WHERE r.id = pick.range_id
  RETURNING r.id, r.group_id, r.start_id, r.end_id, r.next_id, r.epoch, r.priority, r.rule_version
),
bumped AS (
  UPDATE groups g SET lease_seq = g.lease_seq + 1 FROM granted WHERE g.id = granted.group_id
  RETURNING g.id, g.name
),
seen AS (
  UPDATE nodes SET last_seen_at = clock.now FROM clock, granted WHERE nodes.id = :node_id
),
expired AS (
  UPDATE lease_log l SET ended_at = pick.prev_heartbeat + :ttl, end_reason = 'expired'
  FROM pick, granted
  WHERE pick.prev_status = 'leased' AND l.range_id = pick.range_id AND l.epoch = pick.prev_epoch
),
logged AS (
  INSERT INTO lease_log (range_id, group_id, epoch, node_id, granted_at, took_over)
  SELECT granted.id, granted.group_id, granted.epoch, :node_id, clock.now, pick.prev_status = 'leased'
  FROM granted, pick, clock
)
SELECT granted.id AS range_id, granted.group_id, bumped.name AS group_name, granted.start_id,
       granted.end_id, granted.next_id, granted.epoch, granted.priority, granted.rule_version,
       pick.prev_status = 'leased' AS took_over
FROM granted JOIN bumped ON bumped.id = granted.group_id CROSS JOIN pick

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
SELECT r.*, {now} AS now FROM ranges r WHERE r.id = :range_id FOR UPDATE

-- name: group_for_update
SELECT * FROM groups WHERE id = :group_id FOR UPDATE

-- name: plain_chunk_report
INSERT INTO plain_chunks (range_id, chunk_from, reports) VALUES (:range_id, :chunk_from, 1)
ON CONFLICT (range_id, chunk_from) DO UPDATE SET reports = plain_chunks.reports + 1
RETURNING reports, fetched_plain_at

-- name: database_size
SELECT pg_database_size(current_database()) AS bytes
