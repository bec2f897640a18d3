-- Users of the newznab API: keys (hashes), daily limits and usage; web UI sessions (the admin's, users').

-- name: user_insert
INSERT INTO users (name, api_key_hash, password_hash, requests_per_day, downloads_per_day, created_at)
VALUES (:name, :api_key_hash, :password_hash, :requests_per_day, :downloads_per_day, {now})
RETURNING id

-- name: user_by_name
SELECT * FROM users WHERE name = :name

-- name: user_by_key
SELECT id, name, api_key_hash, enabled, requests_per_day, downloads_per_day FROM users
WHERE api_key_hash = :api_key_hash

-- name: user_set_key
UPDATE users SET api_key_hash = :api_key_hash WHERE name = :name RETURNING id

-- name: user_set_password
UPDATE users SET password_hash = :password_hash WHERE name = :name RETURNING id

-- name: user_sessions_delete
-- A new password ends the sessions the old one opened.
DELETE FROM web_sessions WHERE user_id = :user_id

-- name: user_set_enabled
UPDATE users SET enabled = :enabled WHERE name = :name RETURNING id

-- name: user_set_limits
UPDATE users SET requests_per_day = :requests_per_day, downloads_per_day = :downloads_per_day
WHERE name = :name RETURNING id

-- name: users_all
SELECT u.*, COALESCE(a.requests, 0) AS requests_today, COALESCE(a.downloads, 0) AS downloads_today,
       {now} AS now
FROM users u
LEFT JOIN api_usage a ON a.user_id = u.id AND a.day = CAST(FLOOR({now} / 86400) AS integer)
ORDER BY u.name

-- name: usage_count_request
-- One request counted atomically (an upsert), the day's totals returned: limits are checked against
-- what this statement saw, so two requests at once can never both take the last one allowed.
INSERT INTO api_usage (user_id, day, requests, downloads)
VALUES (:user_id, CAST(FLOOR({now} / 86400) AS integer), 1, 0)
ON CONFLICT (user_id, day) DO UPDATE SET requests = api_usage.requests + 1
RETURNING requests, downloads

-- name: usage_count_download
INSERT INTO api_usage (user_id, day, requests, downloads)
VALUES (:user_id, CAST(FLOOR({now} / 86400) AS integer), 0, 1)
ON CONFLICT (user_id, day) DO UPDATE SET downloads = api_usage.downloads + 1
RETURNING requests, downloads

-- name: usage_uncount_download
-- A download refused at its limit is not one the user had.
UPDATE api_usage SET downloads = downloads - 1
WHERE user_id = :user_id AND day = CAST(FLOOR({now} / 86400) AS integer) AND downloads > 0

-- name: user_seen
UPDATE users SET last_seen_at = {now} WHERE id = :user_id

-- name: release_grab
UPDATE releases SET grabs = grabs + 1 WHERE id = :id

-- name: session_insert
INSERT INTO web_sessions (token_hash, csrf, user_id, created_at, expires_at)
VALUES (:token_hash, :csrf, :user_id, {now}, {now} + :ttl)

-- name: session_get
-- A user's session ends with the user: disabled or gone, the join says so.
SELECT s.token_hash, s.csrf, s.expires_at, s.user_id, u.name, u.enabled, u.requests_per_day,
       u.downloads_per_day
FROM web_sessions s LEFT JOIN users u ON u.id = s.user_id
WHERE s.token_hash = :token_hash AND s.expires_at > {now}

-- name: session_delete
DELETE FROM web_sessions WHERE token_hash = :token_hash

-- name: sessions_expire
DELETE FROM web_sessions WHERE expires_at <= {now}
