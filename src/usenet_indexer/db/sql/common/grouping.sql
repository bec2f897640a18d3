-- Loose releases joined into one (issue 16; catalog/grouping.py, indexing/grouping.py).
-- "Loose": one file of a release announced with more, under an obfuscated name. The predicate is the
-- partial index releases_loose's, word for word (SQLite uses a partial index only then).

-- name: loose_groups
SELECT DISTINCT group_name FROM releases
WHERE files_seen = 1 AND file_total > 1 AND obfuscated AND NOT loose_settled
ORDER BY group_name

-- name: loose_in_group
SELECT key, poster, file_total, first_article, last_article, first_date, last_date, groups FROM releases
WHERE group_name = :group_name
  AND files_seen = 1 AND file_total > 1 AND obfuscated AND NOT loose_settled

-- name: grouping_ranges
-- What Settled (indexing/grouping.py) needs of a group's ranges: those reaching :low (the lowest
-- article a stretch can ask about, less a lane's horizon) and every range still to be read, whose
-- resume points place the lanes. Ranges wholly below :low and read are never asked about. lane_epoch:
-- granted through a lane, the lane its priority says (tail below 0).
SELECT start_id, end_id, next_id, status, lane_epoch IS NOT NULL AS by_lane, priority FROM ranges
WHERE group_id = :group_id AND (end_id >= :low OR (status IN ('planned', 'leased') AND next_id <= end_id))

-- name: grouping_lanes
SELECT lane, snapshot_next, snapshot_location FROM group_leases
WHERE group_id = :group_id AND snapshot_next IS NOT NULL

-- name: release_alias_insert
INSERT INTO release_aliases (member_key, release_key, created_at) VALUES (:member_key, :release_key, {now})
ON CONFLICT (member_key) DO UPDATE SET release_key = excluded.release_key

-- name: release_aliases_retarget
-- Aliases of a release that is itself joined into another (never made by grouping, which joins only
-- loose releases, but kept true so that a lookup needs one step).
UPDATE release_aliases SET release_key = :release_key WHERE release_key = :member_key

-- name: release_delete
DELETE FROM releases WHERE key = :key

-- name: probe_forget
DELETE FROM probe_queue WHERE release_key = :key

-- name: release_loose_settle
UPDATE releases SET loose_settled = true WHERE key = :key

-- Loose runs (indexing/runs.py, migration 0011): binary-sized articles no subject rule reads.

-- name: run_insert
INSERT INTO loose_runs (key, group_name, groups, poster, first_article, last_article, first_date, last_date,
                        articles, max_size, segments, updated_at)
VALUES (:key, :group_name, :groups, :poster, :first_article, :last_article, :first_date, :last_date,
        :articles, :max_size, :segments, {now})

-- name: run_update
UPDATE loose_runs
SET groups = :groups, poster = :poster, first_article = :first_article, last_article = :last_article,
    first_date = :first_date, last_date = :last_date, articles = :articles, max_size = :max_size,
    segments = :segments, updated_at = {now}
WHERE key = :key

-- name: run_groups
SELECT DISTINCT group_name FROM loose_runs ORDER BY group_name

-- name: runs_in_group
SELECT key, poster, first_article, last_article, first_date, last_date, articles, max_size, groups
FROM loose_runs
WHERE group_name = :group_name

-- name: run_delete
DELETE FROM loose_runs WHERE key = :key
