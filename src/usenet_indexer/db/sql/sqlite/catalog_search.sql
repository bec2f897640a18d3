-- Searching the catalog, SQLite: FTS5 (releases_fts, kept by the triggers of migration 0003).

-- name: search_where_text
-- :text is an FTS5 query of double-quoted words (catalog/search.py builds it: no operator gets in).
id IN (SELECT rowid FROM releases_fts WHERE releases_fts MATCH :text)

-- name: search_where_categories
-- :categories: exact ids, parents expanded (catalog/search.py category_ids).
category IN (SELECT value FROM json_each(:categories))

-- name: search_where_group
(group_name = :group OR instr(' ' || groups || ' ', ' ' || :group || ' ') > 0)

-- name: search_count
-- Counted up to a cap, in no order: ordering made SQLite sort every match of a frequent word
-- (140 ms at 100,000 releases against 37 ms).
SELECT count(*) AS n FROM (SELECT 1 FROM releases WHERE {where} LIMIT :count_cap) AS matching
