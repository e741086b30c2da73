"""What people see of delivery and do to it.

- `status`: what the status screens show, from PostgreSQL (the record) and Redis (health).
- `control`: pause (with a reason), resume, retry now, resend a file, replay dead letters.
- `connection_check`: the admin's "Test connection", recorded in the attempts log.
- `probes`: connection tests and host-key fetches run by delivery workers, capped in all
  and per person, their outcomes kept for the page that shows them and as the record of who probed what.
- `behind_alert`: a destination owed a version (or a change to its file unbuilt) for longer
  than BEHIND_AFTER_S.
- `dead_mans_switch`: silence is an alarm (no sweep, no delivery worker).
- `key_cleanup`: a deleted destination's or retired subscription's Redis keys go with it.
"""
