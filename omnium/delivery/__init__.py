"""Getting every new version to every destination, with proof.

- `fanout`: a new version becomes owed rows (`models.DeliveryState`), then `kicks` after commit.
- `queues`, `kick_consumer`, `worker_threads`: one queue per destination; a delivery worker's
  consumer step takes its kicks and hands each destination to a pool thread to drain.
- `tasks`: the sweeper (re-kicks, timers from PostgreSQL, `behind_alert`) and pruning.
- `sender`: lease (`lease`) → owed file → `rendering` → transport (`transport_cache`) → proof.
- `backoff`, `health`, `control`: retries, published health, pause/resume/retry/resend.
- `status`, `views`, `admin`: the status screens and the admin actions; `deletion`: deleting
  a destination while it sends.
"""
