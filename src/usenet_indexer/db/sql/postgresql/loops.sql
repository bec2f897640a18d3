-- The coordinator's loops, PostgreSQL: lists of ranges passed as arrays (Tx.array).

-- name: plain_chunks_of_ranges
SELECT range_id, chunk_from, fetched_plain_at FROM plain_chunks
WHERE range_id = ANY(CAST(:range_ids AS bigint[]))

-- name: fetched_chunks_of_ranges
SELECT range_id, chunk_from FROM fetched_chunks WHERE range_id = ANY(CAST(:range_ids AS bigint[]))
