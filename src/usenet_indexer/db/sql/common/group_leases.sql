-- Group leases (lanes): a worker holds one group's history or tail lane and takes its ranges in order.

-- name: group_lane_candidates
-- Groups with ranges left in the lane and no live holder of it, best first (the lane's best priority).
SELECT g.id AS group_id, g.name,
       (SELECT MIN(r.priority) FROM ranges r
        WHERE r.group_id = g.id AND (r.priority >= 0) = :history
          AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id) AS best
FROM groups g
WHERE g.enabled
  AND EXISTS (SELECT 1 FROM ranges r
              WHERE r.group_id = g.id AND (r.priority >= 0) = :history
                AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
                AND (r.status = 'planned' OR r.heartbeat_at < {now} - :ttl))
  AND NOT EXISTS (SELECT 1 FROM group_leases h
                  WHERE h.group_id = g.id AND h.lane = :lane AND h.node_id IS NOT NULL
                    AND h.heartbeat_at >= {now} - :ttl)
ORDER BY best, g.id
LIMIT 8

-- name: group_lane_ensure
INSERT INTO group_leases (group_id, lane) VALUES (:group_id, :lane) ON CONFLICT (group_id, lane) DO NOTHING

-- name: group_lane_claim
-- Compare-and-set: success is judged by the row coming back, never by a read before the write.
UPDATE group_leases
SET node_id = :node_id, epoch = epoch + 1, leased_at = {now}, heartbeat_at = {now}, range_id = NULL,
    claim = :claim
WHERE group_id = :group_id AND lane = :lane AND epoch = :prev_epoch
  AND (node_id IS NULL OR heartbeat_at < {now} - :ttl)
RETURNING epoch, snapshot_next, snapshot_size, leased_at

-- name: node_lane_leases
-- A node's live lane leases (see node_range_leases).
SELECT group_id, lane, epoch FROM group_leases WHERE node_id = :node_id AND heartbeat_at >= {now} - :ttl

-- name: group_lane_get
SELECT gl.*, g.name, {now} AS now FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.group_id = :group_id AND gl.lane = :lane

-- Every write of a lane's holder below is conditional on holder, epoch and the TTL at its own clock,
-- and its caller checks that a row came back (issue 14: a snapshot's UPDATE matched no row after a
-- claim, and the PUT answered 200). On PostgreSQL the caller has locked the row first
-- (group_lane_for_update), so the TTL is judged after any claim in flight has committed or not.

-- name: group_lane_heartbeat
UPDATE group_leases SET heartbeat_at = {now}
WHERE group_id = :group_id AND lane = :lane AND node_id = :node_id AND epoch = :epoch
  AND heartbeat_at >= {now} - :ttl
RETURNING heartbeat_at

-- name: group_lane_release
-- With a claim tag: a dead worker's lane it never read, given back by its supervisor (leases/claims.py).
UPDATE group_leases SET node_id = NULL, range_id = NULL
WHERE group_id = :group_id AND lane = :lane AND node_id = :node_id AND epoch = :epoch
  AND heartbeat_at >= {now} - :ttl AND (CAST(:claim AS TEXT) IS NULL OR claim = :claim)
RETURNING {now} AS now

-- name: group_lane_next_range
-- The lane's next range in article order still to be read, and whether someone holds it live: a lane
-- never skips a range (its window would miss what that range holds; the caller waits instead).
SELECT r.id AS range_id, r.epoch AS prev_epoch, r.status AS prev_status, r.heartbeat_at AS prev_heartbeat,
       (r.status = 'leased' AND r.heartbeat_at >= {now} - :ttl) AS live
FROM ranges r
WHERE r.group_id = :group_id AND (r.priority >= 0) = :history
  AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
ORDER BY r.start_id
LIMIT 1

-- name: group_lane_current
UPDATE group_leases SET range_id = :range_id, heartbeat_at = {now}
WHERE group_id = :group_id AND lane = :lane AND node_id = :node_id AND epoch = :epoch
  AND heartbeat_at >= {now} - :ttl
RETURNING range_id

-- name: group_lane_snapshot
UPDATE group_leases
SET previous_next = CASE WHEN snapshot_next = :next THEN previous_next ELSE snapshot_next END,
    previous_size = CASE WHEN snapshot_next = :next THEN previous_size ELSE snapshot_size END,
    previous_location = CASE WHEN snapshot_next = :next THEN previous_location ELSE snapshot_location END,
    snapshot_next = :next, snapshot_size = :size, snapshot_location = :location, snapshot_at = {now},
    heartbeat_at = {now}
WHERE group_id = :group_id AND lane = :lane AND node_id = :node_id AND epoch = :epoch
  AND heartbeat_at >= {now} - :ttl
RETURNING snapshot_at

-- name: snapshot_log_insert
INSERT INTO snapshot_log (group_id, lane, epoch, node_id, next, size, location, recorded_at, lease_expires_at)
VALUES (:group_id, :lane, :epoch, :node_id, :next, :size, :location, :recorded_at, :lease_expires_at)

-- name: lane_log_grant
INSERT INTO lane_log (group_id, lane, epoch, node_id, granted_at, took_over, claim)
VALUES (:group_id, :lane, :epoch, :node_id, :granted_at, :took_over, :claim)

-- name: lane_log_end
UPDATE lane_log SET ended_at = :ended_at, end_reason = :reason
WHERE group_id = :group_id AND lane = :lane AND epoch = :epoch AND ended_at IS NULL

-- name: group_lane_count_headers
UPDATE group_leases SET headers = headers + :headers WHERE group_id = :group_id AND lane = :lane
