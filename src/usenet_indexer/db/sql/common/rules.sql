-- Rule sets.

-- name: rules_current
SELECT version FROM rule_sets ORDER BY version DESC LIMIT 1

-- name: rules_get
SELECT * FROM rule_sets WHERE version = :version

-- name: rules_insert
INSERT INTO rule_sets (version, rules, note, created_at) VALUES (:version, :rules, :note, {now})

-- name: rules_all
SELECT * FROM rule_sets ORDER BY version
