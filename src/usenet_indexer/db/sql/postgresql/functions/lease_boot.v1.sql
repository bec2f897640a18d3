-- The server's run since its last crash, as a number that only grows (migration 0017): a range's
-- epoch is bumped by the runs it missed (ranges_epoch_unique.v1), so that a grant lost in a crash
-- never has its epoch issued again. lease_boot_alive is UNLOGGED: crash recovery (of the server, or
-- of a backend's crash, which resets shared memory and replays the WAL) empties it, and only a
-- crash can lose a commit. The first call that finds it empty begins a new run: lease_boot's count
-- plus one, committed durably — a run's number is on disk before any grant is made under it, so no
-- crash can issue it twice. Two first calls at once: the second waits on lease_boot's row and then
-- reads the run the first began (a new snapshot per statement under READ COMMITTED).
CREATE OR REPLACE FUNCTION lease_boot() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_boot bigint;
BEGIN
  SELECT a.boot INTO v_boot FROM lease_boot_alive a;
  IF FOUND THEN
    RETURN v_boot;
  END IF;
  PERFORM 1 FROM lease_boot b FOR UPDATE;
  SELECT a.boot INTO v_boot FROM lease_boot_alive a;
  IF FOUND THEN
    RETURN v_boot;
  END IF;
  UPDATE lease_boot b SET boot = b.boot + 1 RETURNING b.boot INTO v_boot;
  INSERT INTO lease_boot_alive (id, boot) VALUES (1, v_boot);
  PERFORM set_config('synchronous_commit', 'on', true);
  RETURN v_boot;
END
$fn$
