-- The web UI's dashboard: progress per group and lane, live workers, leases, failed ranges.

-- name: dashboard_lanes
-- Articles planned and read per group and lane (tail: priority < 0). A range's read part is up to its
-- resume point; a done range counts whole.
SELECT group_id, CASE WHEN priority < 0 THEN 'tail' ELSE 'history' END AS lane, count(*) AS ranges,
       COALESCE(SUM(end_id - start_id + 1), 0) AS articles,
       COALESCE(SUM(CASE WHEN status = 'done' THEN end_id - start_id + 1 ELSE next_id - start_id END), 0)
           AS read
FROM ranges
GROUP BY group_id, CASE WHEN priority < 0 THEN 'tail' ELSE 'history' END

-- name: dashboard_workers
-- Each node with its live leases (heard from within the TTL) and the headers its batches stored in
-- the last :window seconds (batch_log_node_stored).
SELECT n.id, n.name, n.enabled, n.last_seen_at, {now} AS now,
       (SELECT count(*) FROM ranges r
        WHERE r.node_id = n.id AND r.status = 'leased' AND r.heartbeat_at > {now} - :ttl) AS live_leases,
       (SELECT COALESCE(SUM(b.headers), 0) FROM batch_log b
        WHERE b.node_id = n.id AND b.stored_at > {now} - :window) AS recent_headers
FROM nodes n
ORDER BY n.name

-- name: dashboard_group_work
-- The batches stored after :since (the chart's hour: charts.py), with their group and when their
-- headers began to be read: at the batch before them in the same lease (range and epoch), else at the
-- lease's grant, else not known (NULL). :since is a value, not the clock: with it both planners read
-- each node's (node_id, stored_at) index (batch_log_node_stored; nodes are never deleted) instead of
-- the whole log, and PostgreSQL's estimate comes from the column's statistics.
SELECT r.group_id, b.headers, b.stored_at,
       COALESCE(
           (SELECT p.stored_at FROM batch_log p
            WHERE p.range_id = b.range_id AND p.epoch = b.epoch AND p.from_id < b.from_id
            ORDER BY p.from_id DESC LIMIT 1),
           (SELECT l.granted_at FROM lease_log l WHERE l.range_id = b.range_id AND l.epoch = b.epoch)
       ) AS began_at
FROM batch_log b JOIN ranges r ON r.id = b.range_id
WHERE b.node_id IN (SELECT id FROM nodes) AND b.stored_at > :since

-- name: dashboard_leases
SELECT r.id, g.name AS group_name, n.name AS node_name, r.start_id, r.end_id, r.next_id, r.epoch,
       r.leased_at, r.heartbeat_at, {now} AS now
FROM ranges r JOIN groups g ON g.id = r.group_id LEFT JOIN nodes n ON n.id = r.node_id
WHERE r.status = 'leased'
ORDER BY r.heartbeat_at DESC
LIMIT 50

-- name: dashboard_failed
SELECT r.id, g.name AS group_name, r.start_id, r.end_id, r.next_id, r.attempts, r.error,
       r.done_at, r.heartbeat_at, {now} AS now
FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.status = 'failed'
ORDER BY r.id
LIMIT 100

-- name: dashboard_catalog
SELECT count(*) AS releases, COALESCE(SUM(size), 0) AS bytes,
       COALESCE(SUM(CASE WHEN complete THEN 1 ELSE 0 END), 0) AS complete, MAX(posted_at) AS newest,
       {now} AS now
FROM releases

-- name: range_retry
-- A failed range planned again from its resume point (the web UI's retry button).
UPDATE ranges SET status = 'planned', node_id = NULL, error = NULL, heartbeat_at = NULL, done_at = NULL
WHERE id = :range_id AND status = 'failed'
RETURNING id

-- name: range_retry_forget_chunks
-- ... and its chunks' corrupt reports forgotten: the retry goes down the corrupt path from the start.
DELETE FROM plain_chunks WHERE range_id = :range_id

-- name: dashboard_probes
-- The probe queue by status and priority (0: obfuscated releases still to be named; 1: releases named
-- by their subjects whose password is still to be read).
SELECT status, priority, count(*) AS n FROM probe_queue GROUP BY status, priority
