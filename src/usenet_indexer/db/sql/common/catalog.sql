-- The catalog: releases merged from batches, and the probe queue.

-- name: release_insert
INSERT INTO releases (key, name, name_source, search_name, poster, group_name, groups, file_total,
                      files_seen, files_expected, parts_seen, parts_expected, completion, complete, size,
                      first_article, last_article, first_date, last_date, posted_at, obfuscated, request_id,
                      category, season, episode, episode_last, year, resolution, segments, created_at,
                      updated_at, listed_at)
VALUES (:key, :name, 'subject', :search_name, :poster, :group_name, :groups, :file_total,
        :files_seen, :files_expected, :parts_seen, :parts_expected, :completion, :complete, :size,
        :first_article, :last_article, :first_date, :last_date, COALESCE(:first_date, {now}), :obfuscated,
        :request_id, :category, :season, :episode, :episode_last, :year, :resolution, :segments, {now},
        {now}, {now})

-- name: release_update
UPDATE releases
SET name = CASE WHEN name_source = 'subject' THEN :name ELSE name END,
    search_name = CASE WHEN name_source = 'subject' THEN :search_name ELSE search_name END,
    poster = :poster, groups = :groups, file_total = :file_total, files_seen = :files_seen,
    files_expected = :files_expected, parts_seen = :parts_seen, parts_expected = :parts_expected,
    completion = :completion, complete = :complete, size = :size, first_article = :first_article,
    last_article = :last_article, first_date = :first_date, last_date = :last_date,
    posted_at = COALESCE(:first_date, posted_at),
    obfuscated = CASE WHEN name_source = 'subject' THEN :obfuscated ELSE obfuscated END, request_id = :request_id,
    category = CASE WHEN name_source = 'subject' THEN :category ELSE category END,
    season = COALESCE(:season, season), episode = COALESCE(:episode, episode),
    episode_last = COALESCE(:episode_last, episode_last), year = COALESCE(:year, year),
    resolution = COALESCE(:resolution, resolution), segments = :segments, updated_at = {now},
    -- Listed again when it becomes complete (migration 0008): feeds sync by this, newest first.
    listed_at = CASE WHEN :complete AND NOT complete THEN {now} ELSE listed_at END
WHERE id = :id

-- name: probe_enqueue
-- :priority 0 for a probe that names the release, 1 for a password probe (taken after: migration 0014).
INSERT INTO probe_queue (release_key, par2_message_id, nfo_message_id, archive_message_id, priority, created_at,
                         updated_at)
VALUES (:key, :par2_message_id, :nfo_message_id, :archive_message_id, :priority, {now}, {now})
-- A password probe answered from another archive's first article than this candidate's is asked again
-- (its row keeps the article it read): a film's volumes stored after its subtitles' small plain
-- archive had that archive answer for the film. The probe re-picks the main set's first volume from
-- the stored release, and reads nothing when that is the article it read before (catalog/probe.py).
ON CONFLICT (release_key) DO UPDATE SET status = 'queued', attempts = 0, error = NULL, updated_at = {now}
WHERE probe_queue.priority = 1 AND excluded.priority = 1 AND probe_queue.status = 'done'
  AND probe_queue.archive_message_id <> excluded.archive_message_id

-- name: release_group_by_key
SELECT group_name FROM releases WHERE key = :key

-- name: release_probed
-- Named from its bodies (catalog/probe.py): the name, its category, and the files renamed in the blob;
-- file_names keeps the renames for fragments that come later (batch_store.renamed).
UPDATE releases
SET name = :name, search_name = :search_name, name_source = :source, category = :category,
    season = COALESCE(:season, season), episode = COALESCE(:episode, episode), year = COALESCE(:year, year),
    resolution = COALESCE(:resolution, resolution), obfuscated = false, segments = :segments,
    file_names = :file_names, password = COALESCE(:password, password), updated_at = {now}
WHERE key = :key

-- name: release_password
-- A password probe's answer (catalog/probe.py): only where the archive's headers told.
UPDATE releases SET password = :password, updated_at = {now} WHERE key = :key

-- name: password_probe_done
-- :read the archive article the answer came from (NULL: none read), checked when asked again.
UPDATE probe_queue
SET status = 'done', error = NULL, archive_message_id = COALESCE(:read, archive_message_id),
    articles = articles + :articles, bytes = bytes + :bytes, updated_at = {now}
WHERE release_key = :key

-- name: probe_requeue
-- A password probe whose release gained another archive set's first volume while it read: asked again.
UPDATE probe_queue
SET status = 'queued', articles = articles + :articles, bytes = bytes + :bytes, updated_at = {now}
WHERE release_key = :key AND status = 'working'

-- name: probe_done
UPDATE probe_queue
SET status = 'done', error = NULL, articles = articles + :articles, bytes = bytes + :bytes, updated_at = {now}
WHERE release_key = :key

-- name: probe_failed
-- Only a probe still working: one cut off with its round may have finished meanwhile (done).
UPDATE probe_queue
SET status = CASE WHEN attempts >= :max_attempts THEN 'failed' ELSE 'queued' END, error = :error,
    articles = articles + :articles, bytes = bytes + :bytes, updated_at = {now}
WHERE release_key = :key AND status = 'working'

-- name: probes_abandoned
-- Every probe still working when the probe loop is claimed anew: its holder died or lost the loop, and
-- its writes are fenced from now (catalog/probe.py). Counted as the attempt it was.
UPDATE probe_queue
SET status = CASE WHEN attempts >= :max_attempts THEN 'failed' ELSE 'queued' END, error = :error,
    updated_at = {now}
WHERE status = 'working'

-- name: probe_again
-- A burst of loose runs (catalog/grouping.py) that gained articles since it was queued or probed: probed
-- again, its cost kept. Not while a probe works on it: that probe sees the new articles when it stores
-- its split, and queues it again itself (catalog/probe.py).
INSERT INTO probe_queue (release_key, par2_message_id, nfo_message_id, created_at, updated_at)
VALUES (:key, '', NULL, {now}, {now})
ON CONFLICT (release_key) DO UPDATE SET status = 'queued', attempts = 0, error = NULL, updated_at = {now}
WHERE probe_queue.status <> 'working'
