-- Searching the catalog (catalog/search.py). ``search_page`` and ``search_count`` are completed with
-- the ``search_where_*`` conditions a query needs, joined by AND in place of {where}: a planner sees
-- only the conditions that apply (one query with "(:x IS NULL OR …)" for every filter plans badly).

-- name: search_page
-- Newest first, id breaking ties: the same order on every page. {order} is posted_at for a query with
-- words, listed_at for a feed without (catalog/search.py; the indexes releases_posted, releases_listed).
SELECT id, key, name, poster, group_name, groups, file_total, files_seen, files_expected, parts_seen,
       parts_expected, completion, complete, size, first_date, last_date, posted_at, listed_at, obfuscated,
       password, category, season, episode, episode_last, year, resolution, imdb, tvdbid, grabs
FROM releases
WHERE {where}
ORDER BY {order} DESC, id DESC
LIMIT :limit OFFSET :offset

-- name: search_where_all
1 = 1

-- name: search_where_since
posted_at >= {now} - :max_age_seconds

-- name: search_where_min_size
size >= :min_size

-- name: search_where_max_size
size <= :max_size

-- name: search_where_season
season = :season

-- name: search_where_episode
-- A multi-episode release (S01E01E02) answers for each of its episodes.
episode <= :episode AND COALESCE(episode_last, episode) >= :episode

-- name: search_where_imdb
imdb = :imdb

-- name: search_where_tvdbid
tvdbid = :tvdbid

-- name: search_where_complete
complete = :complete

-- name: release_by_key
SELECT id, key, name, poster, group_name, groups, file_total, files_seen, files_expected, parts_seen,
       parts_expected, completion, complete, size, first_date, last_date, posted_at, listed_at, obfuscated,
       password, category, season, episode, episode_last, year, resolution, imdb, tvdbid, grabs
FROM releases
-- A guid handed out before its release was joined into another (issue 16) finds the joined release.
WHERE key = COALESCE((SELECT release_key FROM release_aliases WHERE member_key = :key), :key)

-- name: release_segments_by_key
SELECT id, key, name, poster, groups, category, password, first_date, posted_at, segments
FROM releases WHERE key = COALESCE((SELECT release_key FROM release_aliases WHERE member_key = :key), :key)

-- name: release_id_kinds
-- Whether any release carries an IMDb or a TVDB id (caps advertises only the ids a search can match).
SELECT EXISTS (SELECT 1 FROM releases WHERE imdb IS NOT NULL) AS imdb,
       EXISTS (SELECT 1 FROM releases WHERE tvdbid IS NOT NULL) AS tvdbid
