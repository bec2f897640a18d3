-- The range heartbeat, as migration 0006 applied it. Replaced by v2 (migration 0007), which
-- checks the TTL after taking the range's row lock.
CREATE OR REPLACE FUNCTION range_heartbeat(p_range bigint, p_node bigint, p_epoch bigint, p_ttl float8)
RETURNS TABLE (range_id bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN QUERY
  WITH beat AS (
    UPDATE ranges r SET heartbeat_at = EXTRACT(EPOCH FROM clock_timestamp())::float8
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= EXTRACT(EPOCH FROM clock_timestamp())::float8 - p_ttl
    RETURNING r.id
  ),
  seen AS (
    UPDATE nodes n SET last_seen_at = EXTRACT(EPOCH FROM clock_timestamp())::float8
    WHERE n.id = p_node AND EXISTS (SELECT 1 FROM beat)
      AND (n.last_seen_at IS NULL OR n.last_seen_at < EXTRACT(EPOCH FROM clock_timestamp())::float8 - 5)
  )
  SELECT beat.id::bigint FROM beat;
END
$fn$
