-- The holder finishes its range (leases/ranges.py): done, its lease logged as ended, its headers
-- counted per group and lane, in one call and one round trip; no row: not held (at its epoch, alive at
-- the database's clock), or not read past its end. The rows are locked before the conditions are
-- checked (see range_heartbeat.v2), so a finish never ends a lease a grant has already counted dead:
-- the group's first, then the range's. The counts below update the group's row and its lane's, and
-- a lane's claim or next range takes the group's then the lane's: a finish that took its range and
-- its lane before its group deadlocked with them (the explorer found it).
CREATE OR REPLACE FUNCTION range_finish(p_range bigint, p_node bigint, p_epoch bigint, p_ttl float8)
RETURNS TABLE (id bigint, group_id bigint, priority bigint, headers bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM groups g WHERE g.id = (SELECT r.group_id FROM ranges r WHERE r.id = p_range)
  FOR NO KEY UPDATE;
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH done AS (
    UPDATE ranges r SET status = 'done', done_at = lease_now(), heartbeat_at = lease_now(), node_id = NULL
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl AND r.next_id > r.end_id
    RETURNING r.id, r.group_id, r.priority, r.headers, r.done_at
  ),
  logged AS (
    UPDATE lease_log l SET ended_at = done.done_at, end_reason = 'finished' FROM done
    WHERE l.range_id = done.id AND l.epoch = p_epoch AND l.ended_at IS NULL
  ),
  counted AS (
    UPDATE groups g
    SET headers_history = g.headers_history + CASE WHEN done.priority >= 0 THEN done.headers ELSE 0 END,
        headers_tail = g.headers_tail + CASE WHEN done.priority < 0 THEN done.headers ELSE 0 END
    FROM done WHERE g.id = done.group_id
  ),
  lane AS (
    UPDATE group_leases gl SET headers = gl.headers + done.headers FROM done
    WHERE gl.group_id = done.group_id AND gl.lane = CASE WHEN done.priority < 0 THEN 'tail' ELSE 'history' END
  )
  SELECT done.id::bigint, done.group_id::bigint, done.priority::bigint, done.headers::bigint FROM done;
END
$fn$
