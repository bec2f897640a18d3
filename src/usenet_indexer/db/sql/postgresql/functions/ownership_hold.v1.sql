-- A loop's write transaction starts with this (coordinator/loops/runner.py): the loop's ownership lease must
-- be held by this holder at this epoch and not expired at the database's clock (or p_now, a test's
-- injected clock: leases/ownership.py), else the transaction
-- fails with SQLSTATE UI001 (read as OwnershipLost). The row is share-locked until the transaction
-- ends, so no other coordinator can claim the loop while its writes are in flight. Raising, instead
-- of returning a row to read, lets the check ride in the transaction's pipeline without a round trip.
CREATE OR REPLACE FUNCTION ownership_hold(p_name text, p_holder text, p_epoch bigint, p_now float8)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM ownership_leases o WHERE o.name = p_name FOR SHARE;
  PERFORM 1 FROM ownership_leases o
  WHERE o.name = p_name AND o.holder = p_holder AND o.epoch = p_epoch AND o.expires_at >= COALESCE(p_now, lease_now());
  IF NOT FOUND THEN
    RAISE EXCEPTION 'ownership lease % is no longer held by % at epoch %', p_name, p_holder, p_epoch
      USING ERRCODE = 'UI001';
  END IF;
END
$fn$
