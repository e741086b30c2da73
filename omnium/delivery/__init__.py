"""Getting every new version to every destination, with proof.

The path of a version, in the order it happens:

1. `fanout`: a new file version becomes owed rows (`models.DeliveryState`), and after the
   commit a kick per destination (`kicks`: a small message on the destination's own queue).
2. `worker/`: a delivery worker's consumer step takes each kick and hands the destination to
   one of its threads.
3. `engine/`: that thread drains the destination under its lease: owed files, rendered in the
   subscription's shape, sent by the transport, and a proof of delivery recorded for each.
4. `operations/`: what people see and do: status screens, pause/resume/retry/resend, the
   connection check, the alerts of a destination behind or a worker silent.

Here, beside the three packages:

- `models`, `admin`, `views`, `tasks` (the sweeper and pruning, run by beat), `permissions`,
  `apps`: Django's and Celery's entry points; `apps.ready` connects the signal receivers.
- `kicks`, `health` (status and events published in Redis, written when they change) and
  `heartbeats` (which worker serves which destination): what every part above shares.
- `settings_changes`: a subscription's or destination's new settings sent at once.
"""
