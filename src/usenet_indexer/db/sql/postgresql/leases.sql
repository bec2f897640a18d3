-- Range leases, PostgreSQL.
--
-- Rows are locked FOR NO KEY UPDATE, never FOR UPDATE: an insert that references the row (a lease
-- log, a lane claim, a snapshot log, a new range of the group) takes KEY SHARE for its foreign key,
-- which FOR UPDATE blocks; a snapshot holding its lane's row then waited on the group's, while a
-- lane's next range held the group's and waited on the lane's (a deadlock the explorer found). The
-- order everywhere: a grant takes its group's row, then its lane's, and never waits on a range's
-- (it skips a locked one); a write under a range lease takes its range's, then its lane's (share),
-- then its group's merge lock; a finish (or finish-abandoned) takes its group's, its range's, then
-- its lane's (its headers are counted on the group and the lane).

-- name: lease_take
-- The grant is a function (migration 0002) so that the group cap is counted with the group locked.
SELECT * FROM lease_take(:node_id, :ttl, :max_per_group, :history_allowed, CAST(:claim AS TEXT))

-- name: range_heartbeat
-- A function (migration 0006), so that its plan is cached: a heartbeat is the most frequent call.
SELECT range_id FROM range_heartbeat(:range_id, :node_id, :epoch, :ttl)

-- name: range_for_update
SELECT r.*, g.name AS group_name, {now} AS now FROM ranges r JOIN groups g ON g.id = r.group_id
WHERE r.id = :range_id FOR NO KEY UPDATE OF r

-- name: group_for_update
SELECT * FROM groups WHERE id = :group_id FOR NO KEY UPDATE

-- name: plain_chunk_report
INSERT INTO plain_chunks (range_id, chunk_from, reports) VALUES (:range_id, :chunk_from, 1)
ON CONFLICT (range_id, chunk_from) DO UPDATE SET reports = plain_chunks.reports + 1
RETURNING reports, fetched_plain_at

-- name: database_size
SELECT pg_database_size(current_database()) AS bytes

-- name: range_finish
-- A function (sql/postgresql/functions/range_finish.v1.sql): locks the range, then checks and finishes
-- it, logs its lease's end and counts its headers, in one round trip. No row: not held, or not past its
-- end (the caller asks why).
SELECT id, group_id, priority, headers FROM range_finish(:range_id, :node_id, :epoch, :ttl)

-- name: range_give_back
-- A function (range_give_back.v3.sql): the holder's range planned again, its lease logged as ended.
SELECT id, now FROM range_give_back(:range_id, :node_id, :epoch, :ttl, :reason, CAST(:claim AS TEXT))

-- name: group_live_leases
-- The group's live leases, for a grant holding the group's lock (group_live_leases.v1.sql).
SELECT group_live_leases(:group_id, :ttl, :except_range) AS n

-- name: range_try_lock
-- A lane's next range, locked unless another transaction holds it (then no row: the lane waits).
SELECT id FROM ranges WHERE id = :range_id FOR NO KEY UPDATE SKIP LOCKED

-- name: group_lock_by_name
-- A plan reads its group under the lock it writes it under (issue 14: two plans read one cursor).
SELECT * FROM groups WHERE name = :name FOR NO KEY UPDATE

-- name: group_lane_for_update
SELECT gl.*, g.name, {now} AS now FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.group_id = :group_id AND gl.lane = :lane
FOR NO KEY UPDATE OF gl

-- name: group_lane_for_share
-- A batch of a range granted through a lane: the lane must stay held until the batch commits.
SELECT gl.*, g.name, {now} AS now FROM group_leases gl JOIN groups g ON g.id = gl.group_id
WHERE gl.group_id = :group_id AND gl.lane = :lane
FOR SHARE OF gl

-- name: ownership_hold
-- Raises SQLSTATE UI001 unless the loop's lease is held (ownership_hold.v1.sql); share-locks it.
SELECT ownership_hold(:name, :holder, :epoch, CAST(:now AS DOUBLE PRECISION))

-- name: claim_lock
-- A grant under a claim tag and a revoke of that tag, one at a time (leases/claims.py): held until
-- the transaction ends. Grants under different tags do not wait on each other.
SELECT pg_advisory_xact_lock(hashtextextended(:claim, 0))
