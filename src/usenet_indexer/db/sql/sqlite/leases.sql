-- Range leases, SQLite. Every write runs under BEGIN IMMEDIATE: writers are serialized, so the pick,
-- the cap count and the grant see one state and no lock hints are needed.

-- name: lease_pick
-- Each group's best candidate per lane (a correlated probe of ranges_lease_pick: SQLite has no
-- LATERAL), then the best of those: spooled first, by priority, then id.
WITH lanes(history) AS (VALUES (0), (1)),
best AS (
  SELECT (
    SELECT r.id FROM ranges r
    WHERE r.group_id = g.id AND (r.priority >= 0) = lanes.history
      AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
      AND (r.status = 'planned' OR r.heartbeat_at < {now} - :ttl)
    ORDER BY (r.spooled_chunks = 0), r.priority, r.id
    LIMIT 1
  ) AS range_id
  FROM groups g CROSS JOIN lanes
  WHERE g.enabled
    AND (:history_allowed OR NOT lanes.history)
    AND NOT EXISTS (
      SELECT 1 FROM group_leases h
      WHERE h.group_id = g.id AND h.node_id IS NOT NULL AND h.heartbeat_at >= {now} - :ttl
        AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
    AND (SELECT count(*) FROM ranges l
         WHERE l.group_id = g.id AND l.status = 'leased' AND l.heartbeat_at >= {now} - :ttl) < :max_per_group
)
SELECT r.id AS range_id, r.group_id, r.epoch AS prev_epoch, r.status AS prev_status,
       r.heartbeat_at AS prev_heartbeat
FROM best JOIN ranges r ON r.id = best.range_id
ORDER BY (r.spooled_chunks = 0), r.priority, r.id
LIMIT 1

-- name: range_heartbeat
UPDATE ranges SET heartbeat_at = {now}
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND heartbeat_at >= {now} - :ttl
RETURNING id

-- name: range_for_update
SELECT r.*, g.name AS group_name, {now} AS now FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.id = :range_id

-- name: group_for_update
SELECT * FROM groups WHERE id = :group_id

-- name: plain_chunk_report
INSERT INTO plain_chunks (range_id, chunk_from, reports) VALUES (:range_id, :chunk_from, 1)
ON CONFLICT (range_id, chunk_from) DO UPDATE SET reports = plain_chunks.reports + 1
RETURNING reports, fetched_plain_at

-- name: database_size
SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()

-- name: range_finish
-- As PostgreSQL's, without the follow-ups (leases/ranges.py runs them in the same transaction).
UPDATE ranges SET status = 'done', done_at = {now}, heartbeat_at = {now}, node_id = NULL
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND heartbeat_at >= {now} - :ttl AND next_id > end_id
RETURNING id, group_id, priority, headers, done_at

-- name: range_give_back
-- Not a range read to its end: planned, nothing would lease or finish it again (the caller finishes it).
UPDATE ranges SET status = 'planned', node_id = NULL, lane_epoch = NULL
WHERE id = :range_id AND node_id = :node_id AND epoch = :epoch AND status = 'leased'
  AND heartbeat_at >= {now} - :ttl AND next_id <= end_id
  AND (CAST(:claim AS TEXT) IS NULL OR claim = :claim)
RETURNING id, {now} AS now

-- name: group_live_leases
-- Under BEGIN IMMEDIATE no other write is in flight: the live leases are the ones within the TTL.
SELECT count(*) AS n FROM ranges
WHERE group_id = :group_id AND status = 'leased' AND heartbeat_at >= {now} - :ttl AND id <> :except_range

-- name: range_try_lock
SELECT id FROM ranges WHERE id = :range_id

-- name: group_lock_by_name
SELECT * FROM groups WHERE name = :name

-- name: group_lane_for_update
SELECT gl.*, g.name, {now} AS now FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.group_id = :group_id AND gl.lane = :lane

-- name: group_lane_for_share
SELECT gl.*, g.name, {now} AS now FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.group_id = :group_id AND gl.lane = :lane

-- name: ownership_hold
-- Under BEGIN IMMEDIATE nobody claims meanwhile: a row back means the loop's lease is held.
SELECT epoch FROM ownership_leases
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at >= COALESCE(CAST(:now AS DOUBLE PRECISION), {now})

-- name: claim_lock
-- Nothing to take: under BEGIN IMMEDIATE a grant and a revoke are serialized already.
SELECT 1
