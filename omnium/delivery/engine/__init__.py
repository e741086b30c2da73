"""One destination's drain: from "it owes something" to a proof of delivery.

- `sender`: the drain. Takes the lease with the first owed files, sends them (one at a time,
  or a push of several where the transport takes them), records the proofs, and looks again
  until nothing is owed; failures go to `backoff`.
- `lease`: one sender per destination at a time, across every process and host
  (acquire, renew, release, and the SQL fragments that fuse them into other statements).
- `owed_files`: what is owed next, read with the lease or after each push, attempts opened.
- `rendering`: a version (as read with the owed files) in the subscription's shape.
- `proofs`: the attempt rows and the proofs, forward only, in one statement per push.
- `backoff`: quick retries with jitter, then the slow pace; a failure's status and alert.
- `transport_cache`: one transport per destination per process (one S3 client, one SFTP
  session), and cutting a send in progress when its destination is paused.
- `deletion`: a destination deleted while it sends.
- `stopping`: a worker's warm shutdown: drains hand over after the send in flight, and sends
  that outlast the stop deadline are cut and recorded.
"""
