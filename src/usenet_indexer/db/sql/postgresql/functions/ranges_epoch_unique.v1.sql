-- A trigger on every update that bumps a range's epoch (migration 0017): lease_take (which commits
-- without waiting for the WAL flush, leases/ranges.py) and a lane's grant (lease_grant) alike.
--
-- Why: an epoch is the fence every write of a holder is checked by. A grant lost in a crash (its
-- commit still in the WAL buffers) leaves its range at the epoch before it; had the next grant
-- issued the lost one's epoch again, a holder the crash forgot — same node, same range, same epoch —
-- would have its writes accepted. So the next grant skips one epoch for every server run (lease_boot)
-- since the range's epoch was last bumped (granted_boot): in one run, a range's epoch is bumped at
-- most once without a durable commit after it (a range back to 'planned' got there by a durable
-- commit — a release, a give-back — and a takeover, the one bump from 'leased', is made durable
-- here), so the epochs lost in the runs it missed are at most one a run, each below the new one.
-- The range's writes under a lost epoch were lost with it: each committed after the grant, in the
-- same WAL, and a durable one (a batch) flushed the grant first. tests/integration/leases/test_lost_take.py.
CREATE OR REPLACE FUNCTION ranges_epoch_unique() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_boot bigint := lease_boot();
BEGIN
  NEW.epoch := NEW.epoch + (v_boot - OLD.granted_boot);
  NEW.granted_boot := v_boot;
  IF OLD.status <> 'planned' THEN
    -- A takeover: durable, so that a run loses at most one bump of a range (above).
    PERFORM set_config('synchronous_commit', 'on', true);
  END IF;
  RETURN NEW;
END
$fn$
