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
