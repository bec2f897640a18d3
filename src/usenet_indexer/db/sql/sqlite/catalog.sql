-- The catalog, SQLite (writers are serialized already).

-- name: batch_lock_group
SELECT :group_id AS locked

-- name: releases_by_keys
SELECT * FROM releases WHERE key IN (SELECT value FROM json_each(:keys))
