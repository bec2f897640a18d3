-- The range heartbeat (v1: migration 0006, for why a function). v2 (migration 0007): the range's row
-- is locked first and the TTL checked after, at a clock read once the lock is ours. A single UPDATE
-- judges its conditions before it waits for a row another transaction only locked, and goes on with
-- them after: a grant that had counted this lease dead (group_live_leases) would then see it revived.
CREATE OR REPLACE FUNCTION range_heartbeat(p_range bigint, p_node bigint, p_epoch bigint, p_ttl float8)
RETURNS TABLE (range_id bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH beat AS (
    UPDATE ranges r SET heartbeat_at = lease_now()
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl
    RETURNING r.id
  ),
  seen AS (
    UPDATE nodes n SET last_seen_at = lease_now()
    WHERE n.id = p_node AND EXISTS (SELECT 1 FROM beat)
      AND (n.last_seen_at IS NULL OR n.last_seen_at < lease_now() - 5)
  )
  SELECT beat.id::bigint FROM beat;
END
$fn$
