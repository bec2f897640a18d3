-- Searching the catalog, SQLite: FTS5 (releases_fts, kept by the triggers of migration 0003).

-- name: search_where_text
-- :text is an FTS5 query of double-quoted words (catalog/search.py builds it: no operator gets in).
id IN (SELECT rowid FROM releases_fts WHERE releases_fts MATCH :text)

-- name: search_where_categories
(category IN (SELECT value FROM json_each(:categories))
 OR (category / 1000) * 1000 IN (SELECT value FROM json_each(:parents)))

-- name: search_where_group
(group_name = :group OR instr(' ' || groups || ' ', ' ' || :group || ' ') > 0)
