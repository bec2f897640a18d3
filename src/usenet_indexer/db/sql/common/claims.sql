-- Claim tags (leases/claims.py): what a worker asked a grant under, revoked by its supervisor when the
-- worker died before reading the answer (issue 17).

-- name: claim_revoked
SELECT 1 AS revoked FROM claims_revoked WHERE node_id = :node_id AND claim = :claim

-- name: claim_revoke
INSERT INTO claims_revoked (node_id, claim, revoked_at) VALUES (:node_id, :claim, {now})
ON CONFLICT (node_id, claim) DO NOTHING

-- name: claims_revoked_prune
DELETE FROM claims_revoked WHERE revoked_at < {now} - :keep

-- name: node_claimed_ranges
-- The node's live range leases granted under a tag (more than one: a request retried after its
-- answer was lost was granted twice).
SELECT id, epoch FROM ranges
WHERE node_id = :node_id AND claim = :claim AND status = 'leased' AND heartbeat_at >= {now} - :ttl

-- name: node_claimed_lanes
SELECT group_id, lane, epoch FROM group_leases
WHERE node_id = :node_id AND claim = :claim AND heartbeat_at >= {now} - :ttl

-- Answering a retry (migration 0019): a request under a tag that already has a live grant of this
-- node is answered with it. Reads, after the tag's lock (claim_lock), writes nothing.

-- name: claim_granted_range
-- ``lane_epoch`` NULL: a plain range lease (SQLite; PostgreSQL's lease_take does this itself); a lane's
-- epoch: that lane's next range, in ``group_id``.
SELECT r.id AS range_id, r.group_id, g.name AS group_name, r.start_id, r.end_id, r.next_id, r.epoch,
       r.priority, r.rule_version, COALESCE(l.took_over, FALSE) AS took_over, TRUE AS replayed
FROM ranges r JOIN groups g ON g.id = r.group_id
LEFT JOIN lease_log l ON l.range_id = r.id AND l.epoch = r.epoch
WHERE r.claim = :claim AND r.status = 'leased' AND r.node_id = :node_id
  AND r.heartbeat_at >= {now} - :ttl
  AND COALESCE(r.lane_epoch, 0) = COALESCE(CAST(:lane_epoch AS BIGINT), 0)
  AND r.group_id = COALESCE(CAST(:group_id AS BIGINT), r.group_id)
LIMIT 1

-- name: claim_granted_lane
SELECT gl.group_id, g.name, gl.epoch, gl.snapshot_next, gl.snapshot_size
FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.claim = :claim AND gl.node_id = :node_id AND gl.lane = :lane AND gl.heartbeat_at >= {now} - :ttl
LIMIT 1
