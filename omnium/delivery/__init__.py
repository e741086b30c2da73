"""Getting every new version to every destination, with proof.

- `fanout`: a new version becomes owed rows (`models.DeliveryState`), then `kicks` after commit.
- `queues`, `worker_threads`: one queue per destination, consumed by the delivery workers.
- `tasks`: drain a destination; the sweeper (re-kicks, timers, `behind_alert`).
- `sender`: lease (`lease`) → owed file → `rendering` → transport (`transport_cache`) → proof.
- `backoff`, `health`, `control`: retries, published health, pause/resume/retry/resend.
- `status`, `views`, `admin`: the status screens and the admin actions; `deletion`: deleting
  a destination while it sends.
"""
