-- The lease audit (leases/audit.py): everything it needs, read once.

-- name: audit_leases
SELECT l.range_id, l.group_id, l.epoch, l.node_id, l.granted_at, l.took_over, l.ended_at, l.end_reason,
       l.lane_epoch, l.claim, r.epoch AS range_epoch, r.status AS range_status, r.heartbeat_at AS range_heartbeat
FROM lease_log l JOIN ranges r ON r.id = l.range_id
ORDER BY l.range_id, l.epoch

-- name: audit_batches
SELECT b.range_id, b.epoch, b.from_id, b.to_id, b.stored_at, b.lease_expires_at, l.lane_epoch,
       r.group_id, r.priority
FROM batch_log b JOIN ranges r ON r.id = b.range_id
LEFT JOIN lease_log l ON l.range_id = b.range_id AND l.epoch = b.epoch
ORDER BY b.range_id, b.from_id, b.epoch

-- name: audit_ranges
SELECT id, group_id, start_id, end_id, next_id, status FROM ranges ORDER BY group_id, start_id

-- name: audit_groups
SELECT id, name, tail_next, history_low FROM groups ORDER BY id

-- name: audit_lanes
SELECT l.group_id, l.lane, l.epoch, l.node_id, l.granted_at, l.ended_at, l.end_reason, l.claim,
       gl.epoch AS lane_epoch, gl.node_id AS lane_node, gl.heartbeat_at AS lane_heartbeat
FROM lane_log l JOIN group_leases gl ON gl.group_id = l.group_id AND gl.lane = l.lane
ORDER BY l.group_id, l.lane, l.epoch

-- name: audit_snapshots
SELECT group_id, lane, epoch, node_id, next, recorded_at, lease_expires_at FROM snapshot_log
ORDER BY group_id, lane, epoch, recorded_at

-- name: audit_claims
-- Every grant asked under a tag its node revoked (leases/claims.py), with the revoke's time.
SELECT 'range' AS kind, l.range_id AS what, l.epoch, l.node_id, l.claim, l.granted_at, c.revoked_at
FROM lease_log l JOIN claims_revoked c ON c.node_id = l.node_id AND c.claim = l.claim
UNION ALL
SELECT 'lane', l.group_id, l.epoch, l.node_id, l.claim, l.granted_at, c.revoked_at
FROM lane_log l JOIN claims_revoked c ON c.node_id = l.node_id AND c.claim = l.claim
ORDER BY 1, 2, 3
