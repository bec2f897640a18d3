-- The range lease grant (leases/ranges.py; why a function: migration 0002). v4 (migration 0019): a
-- request under a claim tag that already has a live range lease of this node (a retry of a request
-- whose answer was lost: the grant committed, the connection broke) is answered with that lease, the
-- same range at the same epoch, and ``replayed``; nothing is written. Looked for after the tag's
-- advisory lock, so a retry that arrives while the first try is still granting waits for its commit
-- and finds it, and after the revoked check, so a revoked tag is answered with nothing.
-- As v3 otherwise (migration 0018): the claim tag the worker asked under (NULL: a worker that sends
-- none) is recorded with the grant, and a revoked tag is granted nothing; the advisory lock on the tag
-- serializes this grant with a revoke of the same tag (leases/claims.py). As v2 (migration 0007): the
-- group's live leases are counted by group_live_leases, which counts a lapsed lease as live while a
-- write for it is in flight; the candidate is locked when picked, skipping one another transaction
-- holds (a batch of a lapsed holder still running): a grant never waits on a range's row while it
-- holds its group's (finish takes them the other way round); the clock is lease_now().
CREATE OR REPLACE FUNCTION lease_take(
  p_node bigint, p_ttl float8, p_max int, p_history boolean, p_claim text
)
RETURNS TABLE (range_id bigint, group_id bigint, group_name text, start_id bigint, end_id bigint,
               next_id bigint, epoch bigint, priority bigint, rule_version int, took_over boolean,
               replayed boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_skip bigint[] := '{}';
  v_group bigint;
  v_now float8;
  v_pick record;
  v_granted record;
BEGIN
  IF p_claim IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_claim, 0));
    IF EXISTS (SELECT 1 FROM claims_revoked c WHERE c.node_id = p_node AND c.claim = p_claim) THEN
      RETURN;
    END IF;
    -- A plain range lease only (lane_epoch NULL): a lane's next range is asked for elsewhere.
    RETURN QUERY
      SELECT r.id, r.group_id, g.name, r.start_id, r.end_id, r.next_id, r.epoch, r.priority,
             r.rule_version, COALESCE(l.took_over, false), true
      FROM ranges r JOIN groups g ON g.id = r.group_id
      LEFT JOIN lease_log l ON l.range_id = r.id AND l.epoch = r.epoch
      WHERE r.claim = p_claim AND r.status = 'leased' AND r.node_id = p_node AND r.lane_epoch IS NULL
        AND r.heartbeat_at >= lease_now() - p_ttl
      LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  FOR attempt IN 1..16 LOOP
    -- 1. The group holding the best candidate (spooled first, by priority, then id), locked; a group
    -- another grant is busy with is passed over, not waited for.
    v_now := lease_now();
    SELECT g.id INTO v_group
    FROM groups g
    CROSS JOIN (VALUES (false), (true)) AS lanes(history)
    CROSS JOIN LATERAL (
      SELECT r.id, r.spooled_chunks, r.priority
      FROM ranges r
      WHERE r.group_id = g.id AND (r.priority >= 0) = lanes.history
        AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
        AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
      ORDER BY (r.spooled_chunks = 0), r.priority, r.id
      LIMIT 1
    ) c
    WHERE g.enabled AND g.id <> ALL (v_skip)
      AND (p_history OR NOT lanes.history)
      AND NOT EXISTS (
        SELECT 1 FROM group_leases h
        WHERE h.group_id = g.id AND h.node_id IS NOT NULL AND h.heartbeat_at >= v_now - p_ttl
          AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
      AND (SELECT count(*) FROM ranges l
           WHERE l.group_id = g.id AND l.status = 'leased' AND l.heartbeat_at >= v_now - p_ttl) < p_max
    ORDER BY (c.spooled_chunks = 0), c.priority, c.id
    LIMIT 1
    FOR NO KEY UPDATE OF g SKIP LOCKED;
    IF v_group IS NULL THEN
      RETURN;
    END IF;

    -- 2. With the group locked and a new snapshot: its live leases, then its best range, locked.
    IF group_live_leases(v_group, p_ttl, 0) < p_max THEN
      v_now := lease_now();
      SELECT c.id, c.epoch, c.status, c.heartbeat_at INTO v_pick
      FROM (VALUES (false), (true)) AS lanes(history)
      CROSS JOIN LATERAL (
        SELECT r.id, r.epoch, r.status, r.heartbeat_at, r.spooled_chunks, r.priority
        FROM ranges r
        WHERE r.group_id = v_group AND (r.priority >= 0) = lanes.history
          AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
          AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
        ORDER BY (r.spooled_chunks = 0), r.priority, r.id
        LIMIT 1
        FOR NO KEY UPDATE OF r SKIP LOCKED
      ) c
      WHERE (p_history OR NOT lanes.history)
        AND NOT EXISTS (
          SELECT 1 FROM group_leases h
          WHERE h.group_id = v_group AND h.node_id IS NOT NULL AND h.heartbeat_at >= v_now - p_ttl
            AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
      ORDER BY (c.spooled_chunks = 0), c.priority, c.id
      LIMIT 1;
      IF FOUND THEN
        -- The row is ours: the update re-reads it, unchanged since the pick or nothing is granted.
        UPDATE ranges r
        SET status = 'leased', node_id = p_node, epoch = r.epoch + 1, attempts = r.attempts + 1,
            leased_at = v_now, heartbeat_at = v_now, lane_epoch = NULL, claim = p_claim,
            rule_version = (SELECT COALESCE(MAX(version), 0) FROM rule_sets)
        WHERE r.id = v_pick.id AND r.epoch = v_pick.epoch AND r.status = v_pick.status
          AND r.next_id <= r.end_id
          AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
        RETURNING r.id, r.group_id, r.start_id, r.end_id, r.next_id, r.epoch, r.priority, r.rule_version
        INTO v_granted;
        IF NOT FOUND THEN
          -- Changed since the pick (a release, a heartbeat): the same group again.
          CONTINUE;
        END IF;
        UPDATE nodes SET last_seen_at = v_now
        WHERE id = p_node AND (last_seen_at IS NULL OR last_seen_at < v_now - 5);
        IF v_pick.status = 'leased' THEN
          UPDATE lease_log l SET ended_at = v_pick.heartbeat_at + p_ttl, end_reason = 'expired'
          WHERE l.range_id = v_pick.id AND l.epoch = v_pick.epoch AND l.ended_at IS NULL;
        END IF;
        INSERT INTO lease_log (range_id, group_id, epoch, node_id, granted_at, took_over, claim)
        VALUES (v_granted.id, v_granted.group_id, v_granted.epoch, p_node, v_now, v_pick.status = 'leased',
                p_claim);
        RETURN QUERY
          SELECT v_granted.id, v_granted.group_id, g.name, v_granted.start_id, v_granted.end_id,
                 v_granted.next_id, v_granted.epoch, v_granted.priority, v_granted.rule_version,
                 v_pick.status = 'leased', false
          FROM groups g WHERE g.id = v_granted.group_id;
        RETURN;
      END IF;
    END IF;
    -- At its cap, emptied meanwhile, or every candidate busy: look at the other groups.
    v_skip := v_skip || v_group;
  END LOOP;
END
$fn$
