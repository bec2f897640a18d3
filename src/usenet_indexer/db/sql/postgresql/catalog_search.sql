-- Searching the catalog, PostgreSQL: full text over the stored vector (migration 0005), GIN-indexed.

-- name: search_where_text
-- plainto_tsquery: the words are ANDed and nothing in them is query syntax.
search_vector @@ plainto_tsquery('simple', :text)

-- name: search_where_categories
-- :categories are exact ids, :parents the x000 ids that stand for all of x000-x999.
(category = ANY(CAST(:categories AS integer[]))
 OR (category / 1000) * 1000 = ANY(CAST(:parents AS integer[])))

-- name: search_where_group
(group_name = :group OR strpos(' ' || groups || ' ', ' ' || :group || ' ') > 0)
