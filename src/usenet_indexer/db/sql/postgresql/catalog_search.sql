-- Searching the catalog, PostgreSQL: full text over the stored vector (migration 0005), GIN-indexed.

-- name: search_where_text
-- plainto_tsquery: the words are ANDed and nothing in them is query syntax.
search_vector @@ plainto_tsquery('simple', :text)

-- name: search_where_categories
-- :categories: exact ids, parents expanded (catalog/search.py category_ids).
category = ANY(CAST(:categories AS integer[]))

-- name: search_where_group
(group_name = :group OR strpos(' ' || groups || ' ', ' ' || :group || ' ') > 0)
