-- Searching the catalog, PostgreSQL: full text over the stored vector (migration 0005), GIN-indexed.

-- name: search_where_text
-- plainto_tsquery: the words are ANDed and nothing in them is query syntax.
search_vector @@ plainto_tsquery('simple', :text)

-- name: search_where_categories
-- :categories: exact ids, parents expanded (catalog/search.py category_ids).
category = ANY(CAST(:categories AS integer[]))

-- name: search_where_group
(group_name = :group OR strpos(' ' || groups || ' ', ' ' || :group || ' ') > 0)

-- name: search_count
-- Counted up to a cap: an exact count of a word in every other release costs more than the page. In
-- the page's order, so that the planner weighs the same plans as for the page: unordered, it took a
-- bitmap of all 164,000 releases holding "web" and "dl" (50 ms) to count the first 1,000.
SELECT count(*) AS n
FROM (SELECT 1 FROM releases WHERE {where} ORDER BY {order} DESC, id DESC LIMIT :count_cap) AS matching

-- name: search_page_counted
-- The page and the (capped) count in one pass over the matches: a title's 1,300 matches were read
-- from the heap twice, once to sort the page and once to count them (30 ms each at 1,000,000).
WITH matching AS MATERIALIZED (
    SELECT id, {order} AS sort_at FROM releases WHERE {where}
    ORDER BY {order} DESC, id DESC
    LIMIT :count_cap
)
SELECT r.id, r.key, r.name, r.poster, r.group_name, r.groups, r.file_total, r.files_seen,
       r.files_expected, r.parts_seen, r.parts_expected, r.completion, r.complete, r.size, r.first_date,
       r.last_date, r.posted_at, r.listed_at, r.obfuscated, r.password, r.category, r.season, r.episode,
       r.episode_last, r.year, r.resolution, r.imdb, r.tvdbid, r.grabs, (SELECT count(*) FROM matching) AS total
FROM (SELECT id, sort_at FROM matching ORDER BY sort_at DESC, id DESC LIMIT :limit OFFSET :offset) AS page
JOIN releases r ON r.id = page.id
ORDER BY page.sort_at DESC, page.id DESC
