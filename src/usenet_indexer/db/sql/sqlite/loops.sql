-- The coordinator's loops, SQLite: lists of ranges passed as JSON text (Tx.array).

-- name: plain_chunks_of_ranges
SELECT range_id, chunk_from, fetched_plain_at FROM plain_chunks
WHERE range_id IN (SELECT value FROM json_each(:range_ids))

-- name: fetched_chunks_of_ranges
SELECT range_id, chunk_from FROM fetched_chunks WHERE range_id IN (SELECT value FROM json_each(:range_ids))
