-- How many of a group's leases are live, counted by a grant holding the group's row lock (lease_take,
-- a lane's next range), leaving out p_except.
--
-- A lease is live while its last heartbeat is within the TTL. One whose heartbeat lapsed is counted
-- live all the same while another transaction holds its row: a batch, a heartbeat or a finish in
-- flight checked the TTL before its commit, and its commit would make the lease live again after
-- this count (issue 14: a batch that waited on its group's lock was stored after a grant had counted
-- its lease dead, and the group had three live leases, its cap two). The lapsed leases nobody holds
-- are locked here until the grant commits; a write arriving for one of them then waits, and finds it
-- lapsed at its own clock (every lease write checks its TTL after taking the row lock).
CREATE OR REPLACE FUNCTION group_live_leases(p_group bigint, p_ttl float8, p_except bigint)
RETURNS int
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_leased int;
  v_lapsed int;
BEGIN
  SELECT count(*) INTO v_leased FROM ranges
  WHERE group_id = p_group AND status = 'leased' AND id <> p_except;
  SELECT count(*) INTO v_lapsed FROM (
    SELECT 1 FROM ranges
    WHERE group_id = p_group AND status = 'leased' AND id <> p_except
      AND heartbeat_at < lease_now() - p_ttl
    FOR NO KEY UPDATE SKIP LOCKED
  ) lapsed;
  -- Between the two counts only fewer leases can be held (every grant in the group needs the lock
  -- the caller holds), so the difference errs towards live: at worst a grant waits for a later call.
  RETURN v_leased - v_lapsed;
END
$fn$
