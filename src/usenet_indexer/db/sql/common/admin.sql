-- Groups, ranges and nodes as operators see and change them.

-- name: group_insert
INSERT INTO groups (name, backfill_articles, backfill_days, backfill_since, capture, created_at)
VALUES (:name, :backfill_articles, :backfill_days, :backfill_since, :capture, {now})
RETURNING id

-- name: group_by_name
SELECT * FROM groups WHERE name = :name

-- name: group_by_id
SELECT * FROM groups WHERE id = :group_id

-- name: groups_all
SELECT * FROM groups ORDER BY name

-- name: group_range_counts
SELECT group_id, status, count(*) AS n, COALESCE(SUM(end_id - start_id + 1), 0) AS articles
FROM ranges GROUP BY group_id, status

-- name: group_set_plan
UPDATE groups SET low_water = :low, high_water = :high, tail_next = :tail_next, history_low = :history_low,
                  error = NULL
WHERE id = :group_id

-- name: group_set_enabled
UPDATE groups SET enabled = :enabled WHERE name = :name RETURNING id

-- name: range_insert
INSERT INTO ranges (group_id, start_id, end_id, next_id, priority, capture, created_at)
VALUES (:group_id, :start, :end, :start, :priority, :capture, {now})
ON CONFLICT (group_id, start_id) DO NOTHING

-- name: node_insert
INSERT INTO nodes (name, token_hash, created_at) VALUES (:name, :token_hash, {now}) RETURNING id

-- name: node_by_name
SELECT * FROM nodes WHERE name = :name

-- name: node_by_token
SELECT id, name, token_hash, enabled FROM nodes WHERE token_hash = :token_hash

-- name: nodes_all
SELECT n.*, {now} AS now,
       (SELECT count(*) FROM ranges r WHERE r.node_id = n.id AND r.status = 'leased') AS leased
FROM nodes n ORDER BY n.name

-- name: node_set_token
-- A node's new token (the old one stops working): `run` issues its workers' tokens at every start.
UPDATE nodes SET token_hash = :token_hash, enabled = TRUE WHERE name = :name RETURNING id

-- name: node_set_enabled
UPDATE nodes SET enabled = :enabled WHERE name = :name RETURNING id

-- name: metrics_ranges
SELECT status, count(*) AS n FROM ranges GROUP BY status

-- name: metrics_probes
-- Probes by status, and what they fetched (issue 16): bodies cost the news account's bandwidth. Of them,
-- the password probes of releases named by their subjects (priority 1, migration 0014).
SELECT status, count(*) AS n, COALESCE(SUM(articles), 0) AS articles, COALESCE(SUM(bytes), 0) AS bytes,
       COALESCE(SUM(CASE WHEN priority = 1 THEN 1 ELSE 0 END), 0) AS passwords,
       COALESCE(SUM(CASE WHEN priority = 1 THEN articles ELSE 0 END), 0) AS password_articles
FROM probe_queue GROUP BY status

-- name: metrics_joined
SELECT count(*) AS members, count(DISTINCT release_key) AS releases FROM release_aliases

-- name: metrics_live_workers
SELECT count(*) AS n FROM ranges WHERE status = 'leased' AND heartbeat_at >= {now} - :ttl
