-- v3 (migration 0018): with p_claim, also conditional on the claim tag the lease was granted under
-- (a dead worker's grant it never read, given back by its supervisor; leases/claims.py).
-- The holder gives its range back (leases/ranges.py): planned again, its lease logged as ended with
-- p_reason ('released' by the holder, 'reclaimed' by its supervisor after the holder died), in one
-- call; no row: not held, or read to its end. Locked first, then checked (see range_heartbeat.v2).
-- A range read to its end is not planned again (issue 17): nothing leases a planned range past its
-- end and finish_abandoned looks only at leased ones, so it stayed planned for good; the caller
-- finishes it instead.
CREATE OR REPLACE FUNCTION range_give_back(
  p_range bigint, p_node bigint, p_epoch bigint, p_ttl float8, p_reason text, p_claim text
)
RETURNS TABLE (id bigint, now float8)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH released AS (
    UPDATE ranges r SET status = 'planned', node_id = NULL, lane_epoch = NULL
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl AND r.next_id <= r.end_id
      AND (p_claim IS NULL OR r.claim = p_claim)
    RETURNING r.id, lease_now() AS now
  ),
  logged AS (
    UPDATE lease_log l SET ended_at = released.now, end_reason = p_reason FROM released
    WHERE l.range_id = released.id AND l.epoch = p_epoch AND l.ended_at IS NULL
  )
  SELECT released.id::bigint, released.now FROM released;
END
$fn$
