-- The lease audit (leases/audit.py): everything it needs, read once.

-- name: audit_leases
SELECT l.range_id, l.group_id, l.epoch, l.node_id, l.granted_at, l.took_over, l.ended_at, l.end_reason,
       r.epoch AS range_epoch, r.status AS range_status, r.heartbeat_at AS range_heartbeat
FROM lease_log l JOIN ranges r ON r.id = l.range_id
ORDER BY l.range_id, l.epoch

-- name: audit_batches
SELECT range_id, epoch, from_id, to_id, stored_at FROM batch_log ORDER BY range_id, from_id, epoch

-- name: audit_ranges
SELECT id, group_id, start_id, end_id, next_id, status FROM ranges ORDER BY id
