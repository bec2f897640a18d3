-- Ownership leases (seed 004): one holder per name, claimed by compare-and-set, fenced by an epoch.
-- :now is the injected clock's reading, or NULL for the database's own.

-- name: ownership_ensure
INSERT INTO ownership_leases (name) VALUES (:name) ON CONFLICT (name) DO NOTHING

-- name: ownership_claim
-- Free or expired; or held by :gone_holder at :gone_epoch, a holder proven gone (NULL when none is:
-- coordinator/loops/runner.py holder_gone), so a lease claimed by anyone since is left alone.
UPDATE ownership_leases
SET holder = :holder, epoch = epoch + 1,
    acquired_at = COALESCE(CAST(:now AS DOUBLE PRECISION), {now}),
    renewed_at = COALESCE(CAST(:now AS DOUBLE PRECISION), {now}),
    expires_at = COALESCE(CAST(:now AS DOUBLE PRECISION), {now}) + :ttl,
    meta = :meta
WHERE name = :name
  AND (holder IS NULL OR expires_at < COALESCE(CAST(:now AS DOUBLE PRECISION), {now})
       OR (holder = :gone_holder AND epoch = :gone_epoch))
RETURNING epoch, expires_at

-- name: ownership_renew
UPDATE ownership_leases
SET renewed_at = COALESCE(CAST(:now AS DOUBLE PRECISION), {now}),
    expires_at = COALESCE(CAST(:now AS DOUBLE PRECISION), {now}) + :ttl
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at >= COALESCE(CAST(:now AS DOUBLE PRECISION), {now})
RETURNING expires_at

-- name: ownership_release
UPDATE ownership_leases SET holder = NULL, expires_at = NULL
WHERE name = :name AND holder = :holder AND epoch = :epoch
RETURNING name

-- name: ownership_get
SELECT * FROM ownership_leases WHERE name = :name

-- name: ownership_expired
SELECT * FROM ownership_leases
WHERE holder IS NOT NULL AND expires_at < COALESCE(CAST(:now AS DOUBLE PRECISION), {now})
ORDER BY name

-- name: ownership_of_holder
SELECT * FROM ownership_leases WHERE holder = :holder ORDER BY name

-- name: ownership_all
SELECT *, COALESCE(CAST(:now AS DOUBLE PRECISION), {now}) AS now FROM ownership_leases ORDER BY name
